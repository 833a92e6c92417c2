package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/gitx"
	"github.com/baton-agent/baton/internal/sandbox"
)

type serveOptions struct {
	sandbox                    sandboxOptions
	app                        appOptions
	githubTokenFile            string
	apiTokenFile               string
	addr, db, agent, logFormat string
	publicURL                  string
	handle                     string
	notifyHook                 string
	notifySecretFile           string
	notifySlackFile            string
	repos                      []string
	run                        workerFlags
	changed                    func(string) bool
}

func newServeCmd(f *Factory) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the delivery pipeline's control plane: API, dashboard, workers and GitHub intake",
		Long: `Serve the delivery pipeline: a JSON API under /api (OpenAPI at
/api/openapi.json), a dashboard with live agent output, GitHub intake
(sources polled, webhooks at /api/webhooks/github), /healthz, /readyz and
/metrics, and --workers in-process workers that run the phases.

It listens on 127.0.0.1:7070 and keeps its data in baton's data directory
(BATON_DATA_DIR, else ~/.local/share/baton; --db or BATON_DATABASE_URL for
another database). Reads on loopback need no token; every change needs the
API token: BATON_API_TOKEN, else one generated at the first start, kept in
the data directory (mode 0600) and printed once. A non-loopback --addr is
refused until a token exists. Webhooks are verified with each source's
secret or BATON_WEBHOOK_SECRET.

It answers only requests whose Host is localhost, an IP address, the
--addr name or the --public-url host: a page on another name that points
at this machine (DNS rebinding) gets 421 and nothing else.

Deliveries created from the API or the dashboard run with --agent (default
$BATON_AGENT, else claude): a request never chooses what runs. Local
repositories they may target are the one serve runs in and each --repo.

SIGINT or SIGTERM stops it: running agents are stopped, their runs
recorded and their phases queued again for the next worker.`,
		Example: `  baton serve
  baton serve --agent codex --workers 2
  BATON_API_TOKEN=... baton serve --addr 0.0.0.0:7070 --db postgres://baton@db/baton
  baton serve --public-url https://baton.example.com   # behind a proxy that keeps the Host
  baton serve --workers 0          # API and dashboard only; workers run elsewhere`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed = cmd.Flags().Changed
			return runServe(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.addr, "addr", "127.0.0.1:7070", "address to listen on")
	fl.StringVar(&o.db, "db", "", "SQLite database file or postgres:// URL (default: BATON_DATABASE_URL, else <data dir>/baton.db)")
	o.run.register(fl, 1, "phases to run at once in this process (0: none, workers run elsewhere)")
	fl.StringVar(&o.agent, "agent", "", "agent for deliveries that name none: claude, codex, droid, pi or command:<argv>, see docs/agents.md (default $BATON_AGENT, else claude)")
	fl.StringArrayVar(&o.repos, "repo", nil, "local repository deliveries may be created in from the API (repeatable; default: the one serve runs in)")
	fl.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&o.publicURL, "public-url", "", "the URL people and GitHub reach this server at, when it is not --addr; its host is accepted as Host (default $BATON_PUBLIC_URL)")
	fl.StringVar(&o.notifyHook, "notify-webhook", "", "announce every delivery to this webhook `URL` (a signed JSON body) when it waits for a person, fails or closes (default $BATON_NOTIFY_WEBHOOK_URL)")
	fl.StringVar(&o.notifySecretFile, "notify-webhook-secret-file", "", "sign those bodies with the secret in this `file` (default $BATON_NOTIFY_WEBHOOK_SECRET_FILE, else the credential notify-webhook-secret)")
	fl.StringVar(&o.notifySlackFile, "notify-slack-url-file", "", "announce them to the Slack incoming webhook whose URL is in this `file` (default $BATON_NOTIFY_SLACK_URL_FILE, else the credential notify-slack-url)")
	fl.StringVar(&o.handle, "github-handle", "", "what a comment on a delivery's issue or pull request mentions to send it back to implement (default $BATON_GITHUB_HANDLE, else @baton)")
	o.sandbox.register(fl)
	fl.StringVar(&o.githubTokenFile, "github-token-file", "", "read the GitHub token from this `file` (default $BATON_GITHUB_TOKEN_FILE, else GH_TOKEN)")
	o.app.register(fl)
	fl.StringVar(&o.apiTokenFile, "api-token-file", "", "read the API token from this `file` (default $BATON_API_TOKEN_FILE, else BATON_API_TOKEN, else the data directory's)")
	return cmd
}

// ServeConfig is `baton serve` as its flags and environment ask,
// checked: what Factory.Serve builds the server from.
type ServeConfig struct {
	// Addr is where to listen (host:port); Hosts are the names it
	// answers to besides localhost and IP addresses (--addr's host,
	// --public-url's).
	Addr  string
	Hosts []string
	// Deliveries opens the delivery database, with Deliveries.Workers
	// phases at once in this process, paced by Lease and Heartbeat.
	Deliveries       DeliveriesOptions
	Lease, Heartbeat time.Duration
	// Agent runs deliveries that name none ("": $BATON_AGENT, else
	// claude); PublicURL is where people reach the dashboard ("": none).
	Agent, PublicURL string
	// Repos are the local repositories the API may create deliveries in.
	Repos []string
	// Handle is what a comment mentions to send a delivery back ("":
	// @baton).
	Handle string
	// WebhookSecret verifies webhooks of sources without their own;
	// APIToken is BATON_API_TOKEN ("": the data directory's, or a new
	// one).
	WebhookSecret, APIToken string
	// Notify is the server's own notification targets.
	Notify  baton.Notify
	Sandbox sandbox.Confinement
	// Project is the context store serve runs in, for the dashboard's
	// project page (nil outside a project).
	Project *fsstore.Store
	Log     *slog.Logger
	Version string
	Now     func() time.Time
	// Started is told, once the server listens, what its banner says.
	Started func(ServeStarted)
}

// ServeStarted is what a server that started tells.
type ServeStarted struct {
	// URL is http:// and the address it listens on.
	URL     string
	DataDir string
	// Agent runs deliveries that name none; AgentFix says how to install
	// its CLI, when this server's workers need it and it is missing.
	Agent, AgentFix string
	// Token is the API token made at this start (shown once), kept in
	// TokenFile; "" when one existed.
	Token, TokenFile string
}

func runServe(ctx context.Context, f *Factory, o serveOptions) error {
	var h slog.Handler
	switch o.logFormat {
	case "text":
		h = newLogHandler(f.IO.Err)
	case "json":
		h = slog.NewJSONHandler(f.IO.Err, nil)
	default:
		return usageError("--log-format must be text or json")
	}
	if err := o.run.check(0); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usageError("--addr %q: want host:port, e.g. 127.0.0.1:7070", o.addr)
	}
	files, err := o.app.apply(f)
	if err != nil {
		return err
	}
	files["GH_TOKEN"], files["BATON_API_TOKEN"] = o.githubTokenFile, o.apiTokenFile
	files["BATON_NOTIFY_WEBHOOK_SECRET"], files["BATON_NOTIFY_SLACK_URL"] = o.notifySecretFile, o.notifySlackFile
	if err := f.secrets(files); err != nil {
		return err
	}
	conf, err := o.sandbox.confinement(f)
	if err != nil {
		return err
	}
	c := ServeConfig{
		Addr: o.addr, Hosts: []string{host}, Deliveries: o.run.deliveries(o.db, ""), Lease: o.run.lease, Heartbeat: o.run.heartbeat,
		Agent: o.agent, PublicURL: cmp.Or(o.publicURL, f.env("BATON_PUBLIC_URL")), Handle: cmp.Or(o.handle, f.env("BATON_GITHUB_HANDLE")),
		WebhookSecret: f.env("BATON_WEBHOOK_SECRET"), APIToken: f.env("BATON_API_TOKEN"), Notify: serverTargets(f, o.notifyHook),
		Sandbox: conf, Log: slog.New(h), Version: f.Version, Now: f.Now,
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return usageError("--public-url %q: want the URL the server is reached at, e.g. https://baton.example.com", c.PublicURL)
		}
		c.Hosts = append(c.Hosts, u.Hostname())
	}
	if c.Handle != "" && (!strings.HasPrefix(c.Handle, "@") || len(c.Handle) < 2 || strings.ContainsAny(c.Handle, " \t\n")) {
		return usageError("--github-handle %q: want a mention such as @baton", c.Handle)
	}
	if c.Repos, err = serveRepos(ctx, f, o.repos); err != nil {
		return err
	}
	if st := f.Store(); st.Root() != "" && st.Exists() {
		c.Project = st
	}
	c.Started = func(s ServeStarted) { serveBanner(f.IO.Err, o.run.workers, conf, s) }
	if f.Serve == nil {
		return baton.Errorf(baton.Internal, "this baton was built without a server")
	}
	err = f.Serve(ctx, c)
	fmt.Fprintln(f.IO.Err, "baton serve stopped")
	return err
}

// serveBanner says what a started server serves, where, and what it
// cannot do yet.
func serveBanner(w io.Writer, workers int, conf sandbox.Confinement, s ServeStarted) {
	if s.Token != "" {
		fmt.Fprintf(w, "API token (shown once; kept in %s, mode 0600):\n  %s\n", s.TokenFile, s.Token)
	}
	if workers > 0 {
		sandboxNotice(w, conf)
	}
	fmt.Fprintf(w, "baton serve: dashboard %s/ · API %s/api · %d worker(s) · agent %s · data in %s (Ctrl-C stops)\n",
		s.URL, s.URL, workers, s.Agent, s.DataDir)
	if s.AgentFix != "" {
		fmt.Fprintf(w, "warning: the %s CLI is not installed: %s\n", s.Agent, s.AgentFix)
	}
	if msg := fileLimitWarning(); msg != "" {
		fmt.Fprintln(w, "warning: "+msg)
	}
}

// serverTargets are the server's own notification targets: --notify-webhook
// (else BATON_NOTIFY_WEBHOOK_URL) with its secret, and the Slack URL,
// both read as secrets. The server checks them.
func serverTargets(f *Factory, hook string) baton.Notify {
	return baton.Notify{WebhookURL: strings.TrimSpace(cmp.Or(hook, f.env("BATON_NOTIFY_WEBHOOK_URL"))),
		WebhookSecret: f.env("BATON_NOTIFY_WEBHOOK_SECRET"), SlackURL: strings.TrimSpace(f.env("BATON_NOTIFY_SLACK_URL"))}
}

// fewOpenFiles is the open-file limit below which serve warns: every
// connection holds a file, and at the limit nothing more is accepted,
// not even /healthz.
const fewOpenFiles = 8192

// fileLimitWarning says when the process may open few files. The Go
// runtime has already raised the soft limit to the hard one at start
// (and hands child processes, agents among them, the original back);
// serve does not call setrlimit itself, which would stop that. Only the
// hard limit is left, and that is for whoever starts serve to raise.
func fileLimitWarning() string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= fewOpenFiles {
		return ""
	}
	return fmt.Sprintf("this process may open only %d files (ulimit -n; hard limit %d), one per connection: that many slow clients at once leave no room for anyone else; raise the hard limit (LimitNOFILE= for systemd, ulimit -Hn in a shell) to serve more", lim.Cur, lim.Max)
}

// serveRepos are the local repositories the API may create deliveries
// in: each --repo, else the git repository serve runs in (if any).
func serveRepos(ctx context.Context, f *Factory, flags []string) ([]string, error) {
	dirs := flags
	if len(dirs) == 0 {
		dirs = []string{f.WorkDir}
	}
	var out []string
	for _, d := range dirs {
		top, err := gitx.Open(f.abs(d)).TopLevel(ctx)
		if err != nil {
			if len(flags) > 0 {
				return nil, usageError("--repo %s is not a git repository", d)
			}
			continue
		}
		out = append(out, top)
	}
	return out, nil
}
