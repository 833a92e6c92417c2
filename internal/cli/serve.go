package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/gitx"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/notify"
	"github.com/baton-agent/baton/internal/web"
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
	fl.StringVar(&o.agent, "agent", "", "agent for deliveries that name none: claude, codex, droid or command:<argv>, see docs/agents.md (default $BATON_AGENT, else claude)")
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
	log := slog.New(h)
	if err := o.run.check(0); err != nil {
		return err
	}
	loopback := web.IsLoopback(o.addr)
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
	targets, err := serverTargets(f, o.notifyHook)
	if err != nil {
		return err
	}
	conf, err := o.sandbox.confinement(f)
	if err != nil {
		return err
	}
	hosts := []string{host}
	if o.publicURL == "" {
		o.publicURL = f.env("BATON_PUBLIC_URL")
	}
	if o.publicURL != "" {
		u, err := url.Parse(o.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return usageError("--public-url %q: want the URL the server is reached at, e.g. https://baton.example.com", o.publicURL)
		}
		hosts = append(hosts, u.Hostname())
	}
	id := delivery.WorkerID("serve")
	svc, err := f.openDeliveries(ctx, o.run.deliveries(o.db, id))
	if err != nil {
		return err
	}
	defer svc.Close()
	conf = conf.InDataDir(svc.DataDir)
	svc.Sandbox = conf
	if o.publicURL != "" {
		svc.PublicURL = o.publicURL
	}
	if o.agent != "" {
		svc.DefaultAgent = o.agent
	}
	agent := svc.DefaultAgent
	if agent == "" {
		agent = baton.DefaultAgent
	}
	if _, err := agentrun.Command(agentrun.Spec{Agent: agent, Prompt: "-"}); err != nil {
		return err
	}

	token, err := web.APIToken(f.env("BATON_API_TOKEN"), svc.DataDir, o.addr)
	if err != nil {
		return err
	}
	if token == "" {
		if token, err = web.CreateToken(svc.DataDir); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Err, "API token (shown once; kept in %s/%s, mode 0600):\n  %s\n", svc.DataDir, web.TokenFile, token)
	}

	repos, err := serveRepos(ctx, f, o.repos)
	if err != nil {
		return err
	}
	if o.handle == "" {
		o.handle = f.env("BATON_GITHUB_HANDLE")
	}
	if o.handle != "" && (!strings.HasPrefix(o.handle, "@") || len(o.handle) < 2 || strings.ContainsAny(o.handle, " \t\n")) {
		return usageError("--github-handle %q: want a mention such as @baton", o.handle)
	}
	in := &intake.Service{Deliveries: svc, WebhookSecret: f.env("BATON_WEBHOOK_SECRET"), Log: log, Now: f.Now, Handle: o.handle}
	if f.GitHub != nil {
		in.GitHub = f.GitHub
	}
	feed := delivery.NewFeed(svc, 0)
	defer feed.Close()
	srv := &web.Server{
		Deliveries: svc, Feed: feed, Intake: in, Token: token, Open: loopback, Repos: repos, Hosts: hosts,
		Agent: agentStatus(agent, o.run.workers == 0), Agents: harness.AgentNames(), Log: log, Version: f.Version, Now: f.Now, Project: serveProject(f),
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return baton.WrapError(baton.Unavailable, err, "listen on %s (is another baton serve running? pick another --addr)", o.addr)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	base := "http://" + ln.Addr().String()
	if o.run.workers > 0 {
		sandboxNotice(f.IO.Err, conf)
	}
	fmt.Fprintf(f.IO.Err, "baton serve: dashboard %s/ · API %s/api · %d worker(s) · agent %s · data in %s (Ctrl-C stops)\n",
		base, base, o.run.workers, agent, svc.DataDir)
	if srv.Agent.Missing() {
		fmt.Fprintf(f.IO.Err, "warning: the %s CLI is not installed: %s\n", agent, srv.Agent.Fix)
	}
	if msg := fileLimitWarning(); msg != "" {
		fmt.Fprintln(f.IO.Err, "warning: "+msg)
	}

	var wg sync.WaitGroup
	errc := make(chan error, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ctx, ln); err != nil {
			errc <- err
		}
	}()
	if o.run.workers > 0 {
		w := o.run.worker(svc, id, log)
		w.Observe = srv.ObserveJob
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				errc <- err
			}
		}()
	}
	if in.GitHub != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = in.Run(ctx, 0)
		}()
	}
	notifier := &notify.Notifier{Store: svc.Store(), Server: targets, PublicURL: svc.PublicURL, Log: log, UserAgent: "baton/" + f.Version}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = notifier.Run(ctx, 0)
	}()
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	stop()
	wg.Wait()
	fmt.Fprintln(f.IO.Err, "baton serve stopped")
	return runErr
}

// serverTargets are the server's own notification targets: --notify-webhook
// (else BATON_NOTIFY_WEBHOOK_URL) with its secret, and the Slack URL,
// both read as secrets.
func serverTargets(f *Factory, hook string) (baton.Notify, error) {
	if hook == "" {
		hook = f.env("BATON_NOTIFY_WEBHOOK_URL")
	}
	n := baton.Notify{WebhookURL: strings.TrimSpace(hook), WebhookSecret: f.env("BATON_NOTIFY_WEBHOOK_SECRET"), SlackURL: strings.TrimSpace(f.env("BATON_NOTIFY_SLACK_URL"))}
	if n.WebhookURL != "" {
		if err := notify.CheckURL("--notify-webhook", n.WebhookURL); err != nil {
			return n, usageError("%s", baton.ErrorMessage(err))
		}
	}
	if n.SlackURL != "" {
		if err := notify.CheckURL("the Slack webhook URL (--notify-slack-url-file)", n.SlackURL); err != nil {
			return n, usageError("%s", baton.ErrorMessage(err))
		}
	}
	return n, nil
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

// agentStatus finds the agent's CLI on PATH; when it is missing, Fix says
// how to install it (from the harness table) or which agents to pick
// instead. elsewhere says that agents run on other machines' workers.
func agentStatus(agent string, elsewhere bool) web.AgentStatus {
	st := web.AgentStatus{Name: agent, Elsewhere: elsewhere}
	argv, err := agentrun.Command(agentrun.Spec{Agent: agent, Prompt: "-"})
	if err != nil || len(argv) == 0 {
		st.Fix = "pick an agent with --agent " + strings.Join(harness.AgentNames(), "|") + "|command:<argv>"
		return st
	}
	if p, err := exec.LookPath(argv[0]); err == nil {
		st.Installed, st.Path = true, p
		return st
	}
	h, err := harness.Lookup(argv[0])
	if err != nil || !h.Agent {
		st.Fix = fmt.Sprintf("%s is not on PATH: install it, or restart with another --agent.", argv[0])
		return st
	}
	install := "Install " + h.Product
	if h.Install != "" {
		install += " (" + h.Install + ")"
	}
	others := slices.DeleteFunc(harness.AgentNames(), func(n string) bool { return n == agent })
	st.Fix = install + ", or restart with --agent " + harness.OrList(append(others, "command:<argv>")) + "."
	return st
}
