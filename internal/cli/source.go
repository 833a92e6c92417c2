package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/intake"
)

func newSourceCmd(f *Factory) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "source",
		Short: "Manage GitHub sources: repositories whose labelled issues become deliveries",
		Long: `A source is a GitHub repository and a label (default "baton"): each of its
open issues with the label becomes a delivery. ` + "`baton serve`" + ` polls sources
(every page, with ETags) and takes their webhooks; ` + "`baton source sync`" + ` reads
one now. A delivery is closed only when its issue is closed or loses the
label, seen in a webhook or in a complete listing.`,
		Example: `  baton source add octo/app --label agent --checkpoints plan,deploy
  baton source list
  baton source sync octo/app
  baton source remove octo/app`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "SQLite database file or postgres:// URL (default: BATON_DATABASE_URL, else <data dir>/baton.db)")
	cmd.AddCommand(newSourceAddCmd(f, &db), newSourceSetCmd(f, &db), newSourceListCmd(f, &db), newSourceRemoveCmd(f, &db), newSourceSyncCmd(f, &db))
	return cmd
}

// withIntake opens the delivery service and the intake over it. The
// command line, run by the machine's owner, may set a source's API URL:
// the rules of where a token may go (github.Access) vet it.
func withIntake(ctx context.Context, f *Factory, db string, fn func(*intake.Service) error) error {
	svc, err := f.openDeliveries(ctx, DeliveriesOptions{DB: db})
	if err != nil {
		return err
	}
	defer svc.Close()
	return fn(&intake.Service{Deliveries: svc, GitHub: f.GitHub, Now: f.Now, CheckAPIURL: github.Access{Getenv: f.Getenv}.CheckAPIURL})
}

func newSourceAddCmd(f *Factory, db *string) *cobra.Command {
	var label, endpoint, checkpoints, agent, apiURL, secret, draft string
	var notifyHook, notifySecretFile, notifySlackFile string
	var paused bool
	var su setupFlags
	cmd := &cobra.Command{
		Use:   "add <owner/name>",
		Short: "Add a GitHub repository as a source",
		Long: `Add a repository whose open issues with --label become deliveries, with
the deliveries' endpoint, checkpoints and agent (empty: the defaults of the
server). --webhook-secret verifies this repository's webhooks (else
BATON_WEBHOOK_SECRET).

--notify-webhook and --notify-slack-url-file announce the source's
deliveries when they wait for a person, fail or close, besides the
server's own targets (baton serve --notify-webhook). The webhook gets a
JSON body signed with --notify-webhook-secret-file's secret
(X-Baton-Signature-256); a Slack incoming webhook's URL is a credential,
so it is read from a file. Only this command sets them, never the API.

` + sourceSetupHelp,
		Example: "  baton source add octo/app\n  baton source add octo/app --label agent --agent codex --checkpoints plan\n  baton source add octo/app --notify-webhook https://hooks.example.com/baton --notify-webhook-secret-file hook.secret\n  baton source add octo/app --setup 'npm ci' --setup-egress-allow registry.npmjs.org",
		Args:    exactArgs(1, "a repository, owner/name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := intake.SourceInput{Repo: args[0], AllowCommandAgent: true}
			set := func(flag string, v *string, dst **string) {
				if cmd.Flags().Changed(flag) {
					*dst = v
				}
			}
			set("label", &label, &in.Label)
			set("endpoint", &endpoint, &in.Endpoint)
			set("agent", &agent, &in.Agent)
			set("api-url", &apiURL, &in.APIURL)
			set("webhook-secret", &secret, &in.WebhookSecret)
			set("draft", &draft, &in.Draft)
			if cmd.Flags().Changed("checkpoints") {
				cps := splitList(checkpoints)
				in.Checkpoints = &cps
			}
			if paused {
				in.Paused = &paused
			}
			n, err := notifyFlags(f, notifyHook, notifySecretFile, notifySlackFile)
			if err != nil {
				return err
			}
			in.Notify, in.AllowNotify = n, true
			in.Setup, in.AllowSetup = su.input(cmd), true
			return withIntake(cmd.Context(), f, *db, func(is *intake.Service) error {
				src, err := is.Add(cmd.Context(), in)
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.Out, "Source %s added (id %s, label %q). `baton serve` polls it; `baton source sync %s` reads it now.\n", src.Repo, src.ID, src.Label, src.Repo)
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&label, "label", baton.DefaultSourceLabel, "issues with this label become deliveries")
	fl.StringVar(&endpoint, "endpoint", "", "the deliveries' last phase before close")
	fl.StringVar(&checkpoints, "checkpoints", "", `the deliveries' checkpoints, e.g. plan,deploy ("none" for none)`)
	fl.StringVar(&agent, "agent", "", "the deliveries' agent: claude, codex, droid, pi or command:<argv> (see docs/agents.md)")
	fl.StringVar(&apiURL, "api-url", "", "GitHub API base URL: https on the repository's host (https://HOST/api/v3/) or api.HOST; the host's token is sent there")
	fl.StringVar(&secret, "webhook-secret", "", "secret of this repository's webhooks")
	fl.StringVar(&draft, "draft", "", "open the deliveries' pull requests as drafts: auto (a draft where the repository has drafts; the default), always or never")
	fl.BoolVar(&paused, "paused", false, "add it paused")
	fl.StringVar(&notifyHook, "notify-webhook", "", "announce the deliveries to this webhook `URL` (a signed JSON body) when they wait for a person, fail or close")
	fl.StringVar(&notifySecretFile, "notify-webhook-secret-file", "", "sign the webhook's bodies with the secret in this `file`")
	fl.StringVar(&notifySlackFile, "notify-slack-url-file", "", "announce them to the Slack incoming webhook whose URL is in this `file`")
	su.register(cmd)
	return cmd
}

// sourceSetupHelp is what add and set say of a source's set-up.
const sourceSetupHelp = `--setup names the set-up of the source's deliveries: shell commands run,
confined, in each delivery's worktree before its first agent phase, again
when one of --setup-file changes (default: the lock files of Go, npm and
the rest), and before verify; --setup-egress-allow is what the set-up
alone may reach (a package registry). A GitHub delivery reads no settings
from its repository, so the source's set-up is what it runs; a person's
` + "`baton delivery create --setup`" + ` wins over it. Only the command line
sets it, never the API: its commands run on this machine.`

// setupFlags are a source's set-up flags.
type setupFlags struct {
	cmds, files, egress []string
	none                bool
}

func (s *setupFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&s.cmds, "setup", nil, "a set-up command (sh -c) of the source's deliveries, e.g. --setup 'npm ci' (repeatable)")
	fl.StringArrayVar(&s.files, "setup-file", nil, "a file, relative to the repository's root, whose change runs the set-up again (repeatable; default the usual lock files)")
	fl.StringArrayVar(&s.egress, "setup-egress-allow", nil, "a host only the set-up may reach: host, host:port, *.domain or a URL (repeatable)")
}

// input is the set-up the flags give, nil when none was given.
func (s *setupFlags) input(cmd *cobra.Command) *baton.SourceSetup {
	if s.none {
		return &baton.SourceSetup{}
	}
	if !cmd.Flags().Changed("setup") && !cmd.Flags().Changed("setup-file") && !cmd.Flags().Changed("setup-egress-allow") {
		return nil
	}
	return &baton.SourceSetup{Commands: s.cmds, Files: s.files, EgressAllow: s.egress}
}

func newSourceSetCmd(f *Factory, db *string) *cobra.Command {
	var su setupFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "set <owner/name | id>",
		Short: "Change the set-up of a source's deliveries",
		Long: `Replace the set-up of the deliveries a source makes from now on (those
made already keep theirs); --no-setup removes it.

` + sourceSetupHelp,
		Example: "  baton source set octo/app --setup 'npm ci' --setup 'go mod download' --setup-egress-allow registry.npmjs.org --setup-egress-allow proxy.golang.org\n  baton source set octo/app --no-setup",
		Args:    exactArgs(1, "a source: its repository, owner/name, or its id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := intake.SourceInput{Setup: su.input(cmd), AllowSetup: true}
			if in.Setup == nil {
				return usageError("give the set-up (--setup, --setup-file, --setup-egress-allow) or --no-setup")
			}
			if su.none && len(su.cmds)+len(su.files)+len(su.egress) > 0 {
				return usageError("--no-setup removes the set-up: give it alone")
			}
			return withIntake(cmd.Context(), f, *db, func(is *intake.Service) error {
				src, err := is.Update(cmd.Context(), args[0], in)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int           `json:"schema_version"`
						Source        *baton.Source `json:"source"`
					}{1, src})
				}
				if src.Setup.IsZero() {
					fmt.Fprintf(printable(f.IO.Out), "Source %s: its deliveries have no set-up.\n", src.Repo)
					return nil
				}
				fmt.Fprintf(printable(f.IO.Out), "Source %s: its new deliveries run the set-up `%s`.\n", src.Repo, strings.Join(src.Setup.Commands, "`; `"))
				return nil
			})
		},
	}
	su.register(cmd)
	cmd.Flags().BoolVar(&su.none, "no-setup", false, "remove the set-up")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the source as JSON")
	return cmd
}

// notifyFlags reads a source's notification targets from its flags; nil
// when none is given. Secrets come from files, never argv.
func notifyFlags(f *Factory, hook, secretFile, slackFile string) (*baton.Notify, error) {
	if hook == "" && secretFile == "" && slackFile == "" {
		return nil, nil
	}
	n := &baton.Notify{WebhookURL: strings.TrimSpace(hook)}
	for _, s := range []struct {
		flag, file string
		dst        *string
	}{{"--notify-webhook-secret-file", secretFile, &n.WebhookSecret}, {"--notify-slack-url-file", slackFile, &n.SlackURL}} {
		if s.file == "" {
			continue
		}
		b, err := readSecret(f.abs(s.file))
		if err != nil {
			return nil, usageError("%s %s cannot be read: %s", s.flag, s.file, why(err))
		}
		*s.dst = strings.TrimSpace(string(b))
	}
	return n, nil
}

func splitList(s string) []string {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return []string{}
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newSourceListCmd(f *Factory, db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List sources with their last sync",
		Long:    "List sources: repository, label, and how the last sync went (counts, errors, rate limit).",
		Example: "  baton source list\n  baton source list --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withIntake(cmd.Context(), f, *db, func(is *intake.Service) error {
				srcs, err := is.List(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					if srcs == nil {
						srcs = []*baton.Source{}
					}
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int             `json:"schema_version"`
						Sources       []*baton.Source `json:"sources"`
					}{1, srcs})
				}
				if len(srcs) == 0 {
					fmt.Fprintln(f.IO.Err, "no sources: add one with `baton source add owner/name`")
					return nil
				}
				tw := tabwriter.NewWriter(printable(f.IO.Out), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tREPOSITORY\tLABEL\tSTATE\tSET-UP\tLAST SYNC")
				for _, s := range srcs {
					state := "active"
					if s.Paused {
						state = "paused"
					}
					setup := "none"
					if !s.Setup.IsZero() {
						setup = clip("`"+strings.Join(s.Setup.Commands, "`; `")+"`", 60)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Repo, s.Label, state, setup, syncText(s.Sync, f.now()))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func syncText(st baton.SyncStatus, now time.Time) string {
	if st.LastSyncAt.IsZero() {
		return "never"
	}
	s := fmt.Sprintf("%s ago: %d open, %d new, %d closed", now.Sub(st.LastSyncAt).Round(time.Second), st.Result.Open, st.Result.Created, st.Result.Closed)
	if st.Error != "" {
		s += "; error: " + clip(st.Error, 100)
	}
	return s
}

func newSourceRemoveCmd(f *Factory, db *string) *cobra.Command {
	return &cobra.Command{
		Use:     "remove <id|owner/name>",
		Short:   "Remove a source (its deliveries stay)",
		Long:    "Remove a source. The deliveries it created stay, and are no longer closed when their issues close.",
		Example: "  baton source remove octo/app",
		Args:    exactArgs(1, "a source id or repository"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withIntake(cmd.Context(), f, *db, func(is *intake.Service) error {
				if err := is.Remove(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(f.IO.Out, "Source %s removed.\n", args[0])
				return nil
			})
		},
	}
}

func newSourceSyncCmd(f *Factory, db *string) *cobra.Command {
	return &cobra.Command{
		Use:   "sync <id|owner/name>",
		Short: "Read a source's open labelled issues now",
		Long: `Read every page of the source's open issues with its label: issues without
a delivery get one, and deliveries whose issue is no longer open with the
label are closed. A sync that fails part of the way closes nothing.`,
		Example: "  baton source sync octo/app",
		Args:    exactArgs(1, "a source id or repository"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withIntake(cmd.Context(), f, *db, func(is *intake.Service) error {
				src, err := is.Sync(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				r := src.Sync.Result
				fmt.Fprintf(f.IO.Out, "%s: %d open with %q, %d new deliveries, %d closed (%d requests, %d unchanged pages).\n",
					src.Repo, r.Open, src.Label, r.Created, r.Closed, r.Requests, r.NotModified)
				return nil
			})
		},
	}
}
