package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
)

func newDeliveryCmd(f *Factory) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "delivery",
		Short: "Carry an issue to a merged change through plan, implement, review, verify, deploy and observe",
		Long: `A delivery is one unit of work from a request (a GitHub issue, or a summary
for a local repository) to a merged change. It moves through the phases
intake, plan, implement, review, verify, deploy, observe and close; agents
do plan, implement and review, baton does the rest. Context accumulates
as refs (the request, the work branch or pull request, reviews, failed
checks), and every agent gets the same prompt: the summary and the refs'
URLs.

Phases run as jobs: start ` + "`baton worker`" + ` to process them, or run one in the
foreground with ` + "`baton delivery run`" + `. A checkpoint phase waits for a person:
` + "`approve`" + ` starts it, and approves its result.

Deliveries live in a SQLite database in baton's data directory
(BATON_DATA_DIR, else ~/.local/share/baton), or in PostgreSQL when
BATON_DATABASE_URL is set; --db picks another SQLite file.`,
		Example: `  baton delivery create --repo . --summary "Add a /health endpoint" --verify "go test ./..."
  baton delivery create --issue https://github.com/octo/app/issues/12 --checkpoints plan,deploy
  baton worker &
  baton delivery watch 1
  baton delivery approve 1`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "SQLite database file or postgres:// URL (default: BATON_DATABASE_URL, else <data dir>/baton.db)")
	cmd.AddCommand(
		newDeliveryCreateCmd(f, &db),
		newDeliveryListCmd(f, &db),
		newDeliveryShowCmd(f, &db),
		newDeliveryActionCmd(f, &db, delivery.ActApprove, "Start a waiting checkpoint phase, or accept a phase's result and move on"),
		newDeliveryRejectCmd(f, &db),
		newDeliverySayCmd(f, &db),
		newDeliveryActionCmd(f, &db, delivery.ActRetry, "Run a failed or blocked phase again"),
		newDeliveryActionCmd(f, &db, delivery.ActCancel, "Stop the running phase: the agent is killed and its result discarded"),
		newDeliveryActionCmd(f, &db, delivery.ActClose, "End a delivery where it stands"),
		newDeliveryRunCmd(f, &db),
		newDeliveryWatchCmd(f, &db),
		newDeliveryLogCmd(f, &db),
	)
	return cmd
}

// withDeliveries opens the delivery service for a command and closes it
// after.
func withDeliveries(ctx context.Context, f *Factory, db string, fn func(*delivery.Service) error) error {
	svc, err := f.openDeliveries(ctx, DeliveriesOptions{DB: db})
	if err != nil {
		return err
	}
	defer svc.Close()
	return fn(svc)
}

type createOptions struct {
	issue, repo, summary                 string
	agent, model, endpoint, checkpoints  string
	verify, deploy, observe, merge, base string
	draft                                string
	observeWindow, observeEvery          time.Duration
	timeout                              string
	agentArgs, passEnv                   []string
	setup, setupEgress                   []string
	maxRounds, stallRounds               int
	json                                 bool
	changed                              func(string) bool
}

func newDeliveryCreateCmd(f *Factory, db *string) *cobra.Command {
	var o createOptions
	cmd := &cobra.Command{
		Use:   "create (--issue URL | --repo PATH --summary TEXT)",
		Short: "Create a delivery for a request and queue its plan",
		Long: `Create a delivery and queue its plan phase. The same repository and request
(issue URL, or summary for a local repository) always name the same
delivery: creating it again prints the existing one and changes nothing.

--issue takes a GitHub issue URL; the repository is the issue's, and the
summary is the issue's title unless --summary is given. --repo takes a
local git repository instead (with --summary, or with --issue to record
the issue as the request): the work branch is pushed to it and deploy
merges into its base branch.

A local repository may hold defaults in .agent/delivery.json (agent,
model, endpoint, checkpoints, base, verify, deploy, observe,
observe_window, observe_every, merge, draft, timeout, max_rounds,
stall_rounds, agent_args, pass_env, egress_allow, setup, setup_files,
setup_from, setup_egress_allow); flags win.

A set-up (--setup, or "setup" in .agent/delivery.json, or "setup_from":
"devcontainer" for the dev container's create commands) makes worktrees
ready: it runs, confined, before the first agent phase, again when a lock
file changes, and before verify; a failure stops the phase with its
output. Its package caches are the repository's, written by the set-up
alone; --setup-egress-allow names what only it may reach.

A delivery that goes round and round is blocked for a person: --stall-rounds
N (default 3) returns to implement in a row whose work tree is one an
earlier round had, with the same failing check or review feedback, block it
with the reason; reject with a note sends it back to implement.

Agents and commands never inherit baton's secrets: GH_TOKEN, GITHUB_TOKEN
(and the enterprise ones) and BATON_ credentials such as
BATON_DATABASE_URL are removed from their environment, since agents follow
text anyone can write into an issue and verify runs code an agent wrote.
--pass-env NAME hands one on anyway; ` + "`delivery show`" + ` says so.`,
		Example: `  baton delivery create --repo . --summary "Add a /health endpoint" --verify "go test ./..." \
      --observe "curl -fsS localhost:8080/health" --observe-window 2m
  baton delivery create --issue https://github.com/octo/app/issues/12 --agent codex
  baton delivery create --repo ~/src/app --summary "Fix the flaky test" --checkpoints none --endpoint review`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed = cmd.Flags().Changed
			return runDeliveryCreate(cmd.Context(), f, *db, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.issue, "issue", "", "GitHub issue URL the delivery is for")
	fl.StringVar(&o.repo, "repo", "", "local git repository to deliver into")
	fl.StringVar(&o.summary, "summary", "", "what to deliver (the first line is the title)")
	fl.StringVar(&o.agent, "agent", "", "agent: claude, codex, droid, pi or command:<argv>, see docs/agents.md (default $BATON_AGENT, else claude)")
	fl.StringVar(&o.model, "model", "", "model for the agent")
	fl.StringVar(&o.endpoint, "endpoint", "", "last phase before close (default observe)")
	fl.StringVar(&o.checkpoints, "checkpoints", "", `phases that wait for a person, e.g. plan,deploy ("none" for none; default plan,deploy)`)
	fl.StringVar(&o.verify, "verify", "", "shell command verify runs in a worktree of the work branch (sh -c)")
	fl.StringVar(&o.deploy, "deploy", "", "command deploy runs instead of merging")
	fl.StringVar(&o.observe, "observe", "", "probe command observe runs repeatedly after deploy")
	fl.DurationVar(&o.observeWindow, "observe-window", 0, "how long observe probes (default 5m)")
	fl.DurationVar(&o.observeEvery, "observe-every", 0, "time between probes (default 30s)")
	fl.StringVar(&o.merge, "merge", "", "merge method: squash (default), merge or rebase")
	fl.StringVar(&o.base, "base", "", "base branch (default: the repository's default branch)")
	fl.StringVar(&o.draft, "draft", "", "open the pull request as a draft: auto (a draft where the repository has drafts; the default), always or never")
	fl.StringVar(&o.timeout, "timeout", "", `time limit of each agent or command run: 45m, or per phase, e.g. 30m,implement=2h (default 60m)`)
	fl.StringArrayVar(&o.agentArgs, "agent-arg", nil, "argument appended to the agent's command line, e.g. --agent-arg=--allowedTools=Read,Edit (repeatable)")
	fl.StringArrayVar(&o.passEnv, "pass-env", nil, "a secret of baton's environment agents and commands get anyway, e.g. --pass-env GH_TOKEN (repeatable; default none)")
	fl.StringArrayVar(&o.setup, "setup", nil, "a set-up command (sh -c) run, confined, before the first agent phase, again when a lock file changes, and before verify, e.g. --setup 'npm ci' (repeatable; default .agent/delivery.json's)")
	fl.StringArrayVar(&o.setupEgress, "setup-egress-allow", nil, "a host only the set-up may reach (a package registry): host, host:port, *.domain or a URL (repeatable)")
	fl.IntVar(&o.maxRounds, "max-rounds", 0, "returns to implement before the delivery is blocked for a person (default 5)")
	fl.IntVar(&o.stallRounds, "stall-rounds", 0, "returns to implement in a row without progress (the same work tree, failing check or review feedback) before the delivery is blocked for a person (default 3)")
	fl.BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func runDeliveryCreate(ctx context.Context, f *Factory, db string, o createOptions) error {
	if o.issue == "" && o.repo == "" {
		return usageError("delivery create needs --issue URL, or --repo PATH with --summary")
	}
	if o.repo != "" && o.issue == "" && strings.TrimSpace(o.summary) == "" {
		return usageError("--repo needs --summary (or --issue) to say what to deliver")
	}
	if o.changed("observe-window") && o.observe == "" {
		return usageError("--observe-window needs --observe CMD")
	}
	req := delivery.Request{IssueURL: o.issue, Summary: o.summary, Actor: f.actor()}
	if o.repo != "" {
		req.Repo = f.abs(o.repo)
	}
	if err := o.settings(&req.Settings); err != nil {
		return err
	}
	return withDeliveries(ctx, f, db, func(svc *delivery.Service) error {
		got, created, err := svc.Create(ctx, req)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(f.IO.Out, struct {
				SchemaVersion int           `json:"schema_version"`
				Created       bool          `json:"created"`
				Delivery      delivery.View `json:"delivery"`
			}{1, created, delivery.NewView(got)})
		}
		if !created {
			fmt.Fprintf(printable(f.IO.Out), "Delivery %s (#%d) already exists for this request; it is %s.\n", got.ID, got.Seq, stateText(got))
			return nil
		}
		fmt.Fprintf(printable(f.IO.Out), "Created delivery %s (#%d) for %s: %s.\n", got.ID, got.Seq, got.Repository, stateText(got))
		fmt.Fprintf(printable(f.IO.Out), "Run `baton worker` to process it, or `baton delivery run %d` to run the plan here.\n", got.Seq)
		return nil
	})
}

// settings turns the flags a person set into the request's overrides:
// a flag not given leaves the default and the repository's
// .agent/delivery.json in charge.
func (o createOptions) settings(st *delivery.Settings) error {
	str := func(flag string, v string) *string {
		if o.changed(flag) {
			return &v
		}
		return nil
	}
	dur := func(flag string, v time.Duration) *time.Duration {
		if o.changed(flag) {
			return &v
		}
		return nil
	}
	st.Agent, st.Model, st.Base = str("agent", o.agent), str("model", o.model), str("base", o.base)
	st.Verify, st.Deploy, st.Observe = str("verify", o.verify), str("deploy", o.deploy), str("observe", o.observe)
	st.ObserveWindow, st.ObserveEvery = dur("observe-window", o.observeWindow), dur("observe-every", o.observeEvery)
	st.Timeout = str("timeout", o.timeout)
	if o.changed("agent-arg") {
		st.AgentArgs = &o.agentArgs
	}
	if o.changed("pass-env") {
		st.PassEnv = &o.passEnv
	}
	if o.changed("setup") {
		st.Setup = &o.setup
	}
	if o.changed("setup-egress-allow") {
		st.SetupEgressAllow = &o.setupEgress
	}
	if o.changed("max-rounds") {
		st.MaxRounds = &o.maxRounds
	}
	if o.changed("stall-rounds") {
		st.StallRounds = &o.stallRounds
	}
	if o.changed("merge") {
		m := baton.MergeMethod(o.merge)
		st.Merge = &m
	}
	if o.changed("draft") {
		m := baton.DraftMode(o.draft)
		st.Draft = &m
	}
	if o.changed("endpoint") {
		p, err := baton.ParsePhase(o.endpoint)
		if err != nil {
			return err
		}
		st.Endpoint = &p
	}
	if o.changed("checkpoints") {
		cps, err := baton.ParseCheckpoints(o.checkpoints)
		if err != nil {
			return err
		}
		st.Checkpoints = &cps
	}
	return nil
}

// stateText says where a delivery is, in words a person acts on.
func stateText(d *baton.Delivery) string {
	s := d.String()
	switch {
	case d.Phase == baton.PhaseClose && d.RunStatus == baton.StatusSucceeded:
		return "closed: delivered"
	case d.Phase == baton.PhaseClose:
		return "closed"
	case d.Canceled:
		return string(d.Phase) + "/canceled: " + d.Error
	case d.RunStatus == baton.StatusPending && d.Queued:
		return s + " (queued for a worker)"
	case d.RunStatus == baton.StatusPending:
		return s + " (checkpoint: waiting for `baton delivery approve`)"
	case d.RunStatus == baton.StatusSucceeded:
		return s + " (checkpoint: waiting for `baton delivery approve`)"
	case d.RunStatus == baton.StatusRunning:
		return s + " (by " + d.Owner + ")"
	case d.RunStatus == baton.StatusFailed, d.RunStatus == baton.StatusBlocked:
		return s + ": " + d.Error
	}
	return s
}

func newDeliveryListCmd(f *Factory, db *string) *cobra.Command {
	var phase, status, state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List deliveries, newest first",
		Long: `List deliveries, newest first, with their phase and run status.

--phase, --status and --state take the words the HTTP API's list and the
MCP deliveries tool take. --json prints each delivery as the API lists it
(long text clipped; ` + "`delivery show --json`" + ` has it whole).`,
		Example: "  baton delivery list\n  baton delivery list --state active\n  baton delivery list --phase review --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			filter, err := delivery.ParseFilter(phase, status, state)
			if err != nil {
				return err
			}
			return withDeliveries(cmd.Context(), f, *db, func(svc *delivery.Service) error {
				list, err := svc.List(cmd.Context(), filter)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int             `json:"schema_version"`
						Deliveries    []delivery.View `json:"deliveries"`
					}{1, delivery.NewListItems(list)})
				}
				if len(list) == 0 {
					fmt.Fprintln(f.IO.Err, "no deliveries: create one with `baton delivery create`")
					return nil
				}
				tw := tabwriter.NewWriter(printable(f.IO.Out), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "#\tID\tPHASE\tSTATUS\tSUMMARY\tREPOSITORY")
				for _, d := range list {
					st := string(d.RunStatus)
					switch {
					case d.Canceled:
						st = "canceled"
					case d.Phase == baton.PhaseClose && d.RunStatus == baton.StatusFailed:
						st = "closed"
					case d.WaitsForPerson() && (d.RunStatus == baton.StatusPending || d.RunStatus == baton.StatusSucceeded):
						st += " (checkpoint)"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", d.Seq, d.ID, d.Phase, st, clip(d.Title(), 60), d.Repository)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&phase, "phase", "", "only deliveries in this phase")
	cmd.Flags().StringVar(&status, "status", "", "only deliveries with this run status: pending, running, succeeded, failed or blocked")
	cmd.Flags().StringVar(&state, "state", "", "active (not closed), waiting (for a person, the longest waiting first), closed or all (default all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// clip shortens s to n runes with an ellipsis, for columns and one-line
// summaries.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// showJSON is `delivery show --json`: the delivery's view, as the HTTP
// API and the MCP delivery tool return it.
type showJSON struct {
	SchemaVersion int `json:"schema_version"`
	delivery.DetailView
}

func newDeliveryShowCmd(f *Factory, db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show <id>",
		Short: "Show a delivery: state, refs, phase log and agent runs",
		Long: `Show a delivery: where it is and what a person can do next, its refs, the
phase log (every change, who made it, how long it lasted) and its agent
runs. <id> is the id, its number from the list, or a unique id prefix.`,
		Example: "  baton delivery show 3\n  baton delivery show 3f2a9c --json",
		Args:    exactArgs(1, "a delivery id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				det, err := svc.Get(ctx, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(f.IO.Out, showJSON{SchemaVersion: 1, DetailView: det.View(f.now())})
				}
				printDelivery(printable(f.IO.Out), det, f.now())
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printDelivery(w io.Writer, det *delivery.Detail, now time.Time) {
	w = printable(w)
	d := det.Delivery
	fmt.Fprintf(w, "delivery %s (#%d): %s\n", d.ID, d.Seq, stateText(d))
	if d.RunStatus == baton.StatusRunning && delivery.OwnerGone(d.Owner) {
		fmt.Fprintf(w, "warning: its worker %s is gone (no process of that id on this machine): `baton delivery run %d` or `baton worker` recovers it now\n", d.Owner, d.Seq)
	} else if d.RunStatus == baton.StatusRunning && now.Sub(d.HeartbeatAt) > delivery.DefaultLease {
		fmt.Fprintf(w, "warning: no heartbeat for %s: its worker may have died; `baton worker` or `baton delivery run %d` recovers it\n",
			now.Sub(d.HeartbeatAt).Round(time.Second), d.Seq)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if d.WaitsForPerson() {
		fmt.Fprintf(tw, "state:\t%s (a decision given --on %[1]s is refused once the delivery moves)\n", delivery.StateOf(d, ""))
	}
	fmt.Fprintf(tw, "summary:\t%s\n", d.Title())
	fmt.Fprintf(tw, "repository:\t%s (%s)\n", d.Repository, d.Forge)
	c := d.Config
	timeouts := c.Timeout(baton.PhaseIntake).String()
	for _, p := range baton.Phases {
		if t, ok := c.PhaseTimeouts[p]; ok {
			timeouts += fmt.Sprintf(", %s %s", p, t)
		}
	}
	fmt.Fprintf(tw, "agent:\t%s, timeout %s, round %d of %d\n", delivery.AgentLine(c), timeouts, d.Rounds, c.MaxRounds)
	cps := make([]string, len(d.Checkpoints))
	for i, p := range d.Checkpoints {
		cps[i] = string(p)
	}
	fmt.Fprintf(tw, "phases:\tendpoint %s, checkpoints %s\n", d.Endpoint, orNone(strings.Join(cps, ", ")))
	deploy := "merge (" + string(orMethod(c.MergeMethod)) + ")"
	if c.DeployCommand != "" {
		deploy = "`" + c.DeployCommand + "`"
	}
	observe := "none"
	if c.ObserveCommand != "" {
		observe = fmt.Sprintf("`%s` for %s", c.ObserveCommand, orDur(c.ObserveWindow, baton.DefaultObserveWindow))
	}
	fmt.Fprintf(tw, "commands:\tverify %s; deploy %s; observe %s\n", orNone(quote(c.VerifyCommand)), deploy, observe)
	if len(c.PassEnv) > 0 {
		fmt.Fprintf(tw, "secrets:\t%s passed to agents and commands (pass_env)\n", strings.Join(c.PassEnv, ", "))
	}
	if len(c.EgressAllow) > 0 {
		fmt.Fprintf(tw, "network:\talso reaches %s (egress_allow)\n", strings.Join(c.EgressAllow, ", "))
	}
	if len(c.Setup) > 0 {
		fmt.Fprintf(tw, "set-up:\t`%s`\n", strings.Join(c.Setup, "`; `"))
	}
	if len(c.SetupEgressAllow) > 0 {
		fmt.Fprintf(tw, "\tthe set-up alone reaches %s (setup_egress_allow)\n", strings.Join(c.SetupEgressAllow, ", "))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nrefs:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range d.Refs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Role, r.Type, r.Label, r.URL)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nphase log:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	setups := det.SetupRuns
	for _, e := range det.PhaseLog {
		st := string(e.Status)
		if e.Verdict != "" {
			st += " (" + string(e.Verdict) + ")"
		}
		dur := e.Duration(now).Round(time.Millisecond).String()
		if e.EndedAt.IsZero() {
			dur += "+"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.StartedAt.UTC().Format("2006-01-02 15:04:05"), e.Phase, st, dur, e.Actor, e.Action, e.Note)
		// A set-up is a row of its own, after the start of the attempt
		// it made ready.
		for len(setups) > 0 && e.Status == baton.StatusRunning && setups[0].Phase == e.Phase && setups[0].Attempt == e.Attempt {
			printSetupRow(tw, setups[0])
			setups = setups[1:]
		}
	}
	for _, su := range setups {
		printSetupRow(tw, su)
	}
	tw.Flush()
	for _, su := range det.SetupRuns {
		if su.Status != baton.SetupFailed {
			continue
		}
		cmd := ""
		if i := su.Ran - 1; i >= 0 && i < len(su.Commands) {
			cmd = su.Commands[i]
		}
		how := fmt.Sprintf("exited %d", su.ExitCode)
		if su.ExitCode < 0 {
			how = "ran out of time"
		}
		fmt.Fprintf(w, "\nset-up %d failed: `%s` %s; the end of its output (all of it in %s on the worker's machine):\n", su.N, cmd, how, su.Log)
		for _, line := range lastLinesOf(su.Output, setupOutputLines) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	if len(det.AgentRuns) > 0 {
		fmt.Fprintln(w, "\nagent runs (baton delivery log "+d.ID+" --run N):")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, r := range det.AgentRuns {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\texit %d\t%s\n", r.N, r.Phase, r.Status, r.Agent, orNone(r.Model),
				costText(r.CostUSD), tokensText(r.InputTokens, r.OutputTokens, "%d in / %d out"), r.Duration.Truncate(time.Millisecond).String(), r.ExitCode, clip(r.Error, 80))
		}
		tw.Flush()
	}
}

// setupOutputLines is how much of a failed set-up's output show prints.
const setupOutputLines = 15

// printSetupRow prints a set-up as a phase log row: when it began, its
// outcome and exit, its time, the phase it made ready and how many of
// its commands ran.
func printSetupRow(w io.Writer, su baton.SetupRun) {
	st := string(su.Status)
	if su.Status != baton.SetupSkipped {
		st += fmt.Sprintf(" (exit %d)", su.ExitCode)
	}
	fmt.Fprintf(w, "  %s\tset-up\t%s\t%s\tfor %s\t%d of %d run\t%s\n", su.StartedAt.UTC().Format("2006-01-02 15:04:05"), st,
		su.Duration().Round(time.Millisecond), su.Phase, su.Ran, len(su.Commands), su.Note)
}

// lastLinesOf is the last n lines of s.
func lastLinesOf(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[max(len(lines)-n, 0):]
}

func ifSet(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func orMethod(m baton.MergeMethod) baton.MergeMethod {
	if m == "" {
		return baton.MergeSquash
	}
	return m
}

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// agentFlags are --agent, --model and --agent-arg of `delivery retry`
// and `delivery run`: how the delivery runs from then on.
type agentFlags struct {
	agent, model string
	args         []string
}

// agentFlagsHelp is what the help of retry and run says of agentFlags.
const agentFlagsHelp = `--agent, --model and --agent-arg change how the delivery runs from this
%s on, e.g. when its agent is not installed here. See docs/delivery.md
for what a command:<argv> agent receives and must print.`

func (a *agentFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&a.agent, "agent", "", "run with this agent from now on: claude, codex, droid, pi or command:<argv> (see docs/agents.md)")
	fl.StringVar(&a.model, "model", "", "run with this model from now on")
	fl.StringArrayVar(&a.args, "agent-arg", nil, "replace the agent's extra arguments (repeatable)")
}

// settings is the change the flags given ask for. A new agent that is
// not installed here is a warning, not an error: a worker on another
// machine may have it.
func (a *agentFlags) settings(f *Factory, fl *pflag.FlagSet) delivery.Settings {
	var change delivery.Settings
	if fl.Changed("agent") {
		change.Agent = &a.agent
		if err := delivery.CheckAgent(a.agent, f.AgentEnv); baton.ErrorCode(err) == baton.NotFound {
			fmt.Fprintf(f.IO.Err, "baton: warning: %v (a worker on another machine may have it)\n", err)
		}
	}
	if fl.Changed("model") {
		change.Model = &a.model
	}
	if fl.Changed("agent-arg") {
		change.AgentArgs = &a.args
	}
	return change
}

// onFlagHelp is the help of --on, the state a decision is made on.
const onFlagHelp = "the state you decided on, as `delivery show` prints it (e.g. plan/succeeded/1): refused if the delivery has moved since"

// onFlagLong says what --on does, for a decision's long help.
const onFlagLong = `

With --on STATE (as ` + "`baton delivery show`" + ` prints it, or a view's "state"
in JSON) the decision applies to that state only: if the delivery moved
meanwhile (a worker ran on, someone else decided), it is refused with what
changed, so a decision is never applied to a state you did not look at.`

func newDeliveryActionCmd(f *Factory, db *string, a delivery.Action, short string) *cobra.Command {
	var note, on string
	var af agentFlags
	long := short + `.

The change, who made it (BATON_ACTOR, else the login name) and why are
recorded in the phase log. An action that does not apply to the
delivery's state is refused with a message that says what would.` + onFlagLong
	example := "  baton delivery " + string(a) + " 3\n  baton delivery " + string(a) + " 3 --on plan/succeeded/1"
	if a == delivery.ActRetry {
		long += "\n\n" + fmt.Sprintf(agentFlagsHelp, "retry")
		example += "\n  baton delivery retry 3 --agent codex\n  baton delivery retry 3 --agent 'command:./scripts/agent.sh'"
	}
	cmd := &cobra.Command{
		Use:     string(a) + " <id>",
		Short:   short,
		Long:    long,
		Example: example,
		Args:    exactArgs(1, "a delivery id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				state, err := delivery.ParseState(on)
				if err != nil {
					return usageError("--on: %s", baton.ErrorMessage(err))
				}
				dec := delivery.Decision{Action: a, Actor: f.actor(), Note: note, On: state}
				if a == delivery.ActRetry {
					dec.Change = af.settings(f, cmd.Flags())
				}
				d, err := svc.DecideOn(ctx, args[0], dec)
				if err != nil {
					return err
				}
				fmt.Fprintf(printable(f.IO.Out), "Delivery %s (#%d) is %s.\n", d.ID, d.Seq, stateText(d))
				return nil
			})
		},
	}
	if a == delivery.ActClose {
		cmd.Flags().StringVarP(&note, "reason", "m", "", "why the delivery is closed")
	}
	cmd.Flags().StringVar(&on, "on", "", onFlagHelp)
	if a == delivery.ActRetry {
		af.register(cmd.Flags())
	}
	return cmd
}

func newDeliveryRejectCmd(f *Factory, db *string) *cobra.Command {
	var reason, on string
	var notes []string
	cmd := &cobra.Command{
		Use:   "reject <id> --reason TEXT",
		Short: "Send a delivery back with a reason: plan → plan, implement → plan, review/verify/deploy → implement",
		Long: `Send a delivery back: plan and implement return to plan; review, verify and
deploy return to implement. Like approve, it decides on a phase that waits
for a person (or failed): refused while the phase is queued for a worker
or runs (cancel it first), so of two people deciding at once only the
first decision counts.

The reason is required. It is kept as a review note with the reject itself
(a reject refused keeps nothing): a file the next agent run reads, its URL a
review ref in the next prompt. On GitHub, baton serve then posts it as a
pull request review, once, and adds the review's URL.

--note comments on one line, as path:line: text: a line of a file the
change lands (its number as the change leaves it, as the dashboard numbers it)
or of the plan (docs/plan.md). Notes are kept with the reason, posted as the
pull request review's line comments on GitHub, and each becomes a review
ref the next prompt lists with its file and line. A note on anything else
is refused before anything is posted.` + onFlagLong,
		Example: `  baton delivery reject 3 --reason "The plan misses the database migration"
  baton delivery reject 3 --on plan/succeeded/1 --reason "Split the migration"
  baton delivery reject 3 -m "Check the expiry" --note "internal/auth/jwt.go:42: an expired token passes here"`,
		Args: exactArgs(1, "a delivery id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError("reject needs --reason TEXT: it is posted where the next run reads it")
			}
			lines, err := baton.ParseLineNotes(strings.Join(notes, "\n"))
			if err != nil {
				return usageError("--note: %s", baton.ErrorMessage(err))
			}
			ctx := cmd.Context()
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				state, err := delivery.ParseState(on)
				if err != nil {
					return usageError("--on: %s", baton.ErrorMessage(err))
				}
				d, err := svc.DecideOn(ctx, args[0], delivery.Decision{Action: delivery.ActReject, Actor: f.actor(), Note: reason, Notes: lines, On: state})
				if err != nil {
					return err
				}
				fmt.Fprintf(printable(f.IO.Out), "Delivery %s (#%d) is %s.\n", d.ID, d.Seq, stateText(d))
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&reason, "reason", "m", "", "why (posted for the next run)")
	cmd.Flags().StringArrayVar(&notes, "note", nil, "a note on a line, as path:line: text (repeatable)")
	cmd.Flags().StringVar(&on, "on", "", onFlagHelp)
	return cmd
}

func newDeliverySayCmd(f *Factory, db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "say <id> <message...>",
		Short: "Tell the agent running a delivery's phase something, without stopping the work",
		Long: `Give the agent running a delivery's phase (plan, implement or review) a
message, as a person watching its live log would: "use the existing
client, not a new one". The message is stored and queued in one
transaction, so it is never lost; the worker running the phase stops the
agent at once and resumes the same session with the message (Claude Code
--resume, codex exec resume, droid exec -s, pi --session), so nothing
the agent did is lost, and the agent carries on. An agent that reported
no session (a command: agent that prints none) is started again with the
phase's prompt and the message. A message sent while the phase is queued
is in its prompt when it starts.

The message is in the delivery's event log (who, when, what) and becomes a
review ref the next phases see. It is refused when no agent phase is
running or queued: reject with a reason speaks to a phase that waits.`,
		Example: `  baton delivery say 3 "Use the existing HTTP client in internal/api, not a new one"
  baton delivery say 3 --json "Stop after the migration; the handlers come in another delivery"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError("say needs a delivery id and a message: baton delivery say 3 \"use the existing client\"")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				m, err := svc.Say(ctx, args[0], f.actor(), strings.Join(args[1:], " "))
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int            `json:"schema_version"`
						Message       *baton.Message `json:"message"`
					}{1, m})
				}
				fmt.Fprintf(printable(f.IO.Out), "Message %d to delivery %s (%s, attempt %d) is queued: the agent gets it at once if it is running, else with the phase's prompt.\n", m.ID, m.DeliveryID, m.Phase, m.Attempt)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the message as JSON")
	return cmd
}

func newDeliveryRunCmd(f *Factory, db *string) *cobra.Command {
	var lease time.Duration
	var sb sandboxOptions
	var af agentFlags
	cmd := &cobra.Command{
		Use:   "run <id>",
		Short: "Run the delivery's pending phase now, in the foreground, with live agent output",
		Long: `Run the delivery's pending phase now, in this terminal, showing the agent's
output as it works. This is how a person starts a checkpoint phase by
hand; a queued phase is taken before a worker gets to it (never both).
Ctrl-C cancels the run (the agent is stopped; retry runs it again).

` + fmt.Sprintf(agentFlagsHelp, "run"),
		Example: "  baton delivery run 3\n  baton delivery run 3 --agent codex --model gpt-5",
		Args:    exactArgs(1, "a delivery id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := f.secrets(nil); err != nil {
				return err
			}
			conf, err := sb.confinement(f)
			if err != nil {
				return err
			}
			change := af.settings(f, cmd.Flags())
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				svc.Sandbox = conf.InDataDir(svc.DataDir)
				sandboxNotice(f.IO.Err, svc.Sandbox)
				d, err := svc.RunNow(ctx, args[0], f.actor(), change, printable(f.IO.Out), lease)
				if err != nil {
					return err
				}
				fmt.Fprintf(printable(f.IO.Out), "\nDelivery %s (#%d) is %s.\n", d.ID, d.Seq, stateText(d))
				if d.RunStatus == baton.StatusFailed {
					return &ExitCodeError{Code: ExitError}
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&lease, "lease", delivery.DefaultLease, "a running phase whose heartbeat is older is taken for dead first")
	af.register(cmd.Flags())
	sb.register(cmd.Flags())
	return cmd
}

func newDeliveryWatchCmd(f *Factory, db *string) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch <id>",
		Short: "Follow a delivery until it waits for a person, fails or closes",
		Long: `Print each change of a delivery as it happens, until it stops at a
checkpoint, is blocked, fails or closes. Exits 0 when it closed or waits
for a person, 1 when it failed. watch only reads: a worker runs the
phases (baton worker, or baton serve); when a phase stays queued for a
few seconds, watch says so and how to run it.`,
		Example: "  baton delivery watch 3",
		Args:    exactArgs(1, "a delivery id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				return runDeliveryWatch(ctx, f, svc, args[0], interval)
			})
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 500*time.Millisecond, "how often to look")
	return cmd
}

// watchQueuedNotice is how long watch lets a phase sit in the queue before
// it says that no worker has taken it.
var watchQueuedNotice = 5 * time.Second

func runDeliveryWatch(ctx context.Context, f *Factory, svc *delivery.Service, ref string, interval time.Duration) error {
	d, err := svc.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	var seen int64
	var queuedSince time.Time // when the current phase was seen queued and not started
	noticed := false
	t := time.NewTicker(max(interval, 10*time.Millisecond))
	defer t.Stop()
	for {
		log, err := svc.PhaseLog(ctx, d.ID)
		if err != nil && baton.ErrorCode(err) != baton.Unavailable {
			return err
		}
		for _, e := range log {
			if e.ID <= seen {
				continue
			}
			seen = e.ID
			st := string(e.Status)
			if e.Verdict != "" {
				st += " (" + string(e.Verdict) + ")"
			}
			fmt.Fprintf(printable(f.IO.Out), "%s  %-9s %-22s %s%s\n", e.StartedAt.Local().Format("15:04:05"), e.Phase, st, e.Actor, ifSet(": ", e.Note))
		}
		cur, err := svc.Current(ctx, d.ID)
		if err == nil {
			switch {
			case cur.Phase != baton.PhaseClose && cur.RunStatus == baton.StatusFailed:
				fmt.Fprintf(printable(f.IO.Out), "Delivery %s (#%d) is %s.\n", cur.ID, cur.Seq, stateText(cur))
				return &ExitCodeError{Code: ExitError}
			case cur.Phase == baton.PhaseClose, cur.WaitsForPerson():
				fmt.Fprintf(printable(f.IO.Out), "Delivery %s (#%d) is %s.\n", cur.ID, cur.Seq, stateText(cur))
				return nil
			case cur.RunStatus == baton.StatusPending && cur.Queued:
				if queuedSince.IsZero() {
					queuedSince = time.Now()
				} else if !noticed && time.Since(queuedSince) >= watchQueuedNotice {
					noticed = true
					fmt.Fprintf(f.IO.Err, "baton: %s of delivery %s is queued and no worker has started it in %s: start one with `baton worker` (or `baton serve`), or run the phase here with `baton delivery run %s`\n",
						cur.Phase, cur.ID, watchQueuedNotice.Round(time.Second), cur.ID)
				}
			default:
				queuedSince, noticed = time.Time{}, false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func newDeliveryLogCmd(f *Factory, db *string) *cobra.Command {
	var n int
	var raw, asJSON bool
	cmd := &cobra.Command{
		Use:   "log <id> [--run N]",
		Short: "Show a delivery's agent runs, or one run's prompt, final message and logs",
		Long: `Without --run, list the delivery's agent runs with model, cost, tokens,
duration and exit status. With --run N, print that run: the system
prompt and prompt it was given, its final message, its error, and where
its raw logs are; --raw also prints the raw event log (claude and codex
JSONL events, or a command agent's stdout). --json prints the runs (or
the run) as JSON: {"delivery", "runs"} or {"delivery", "run"}.`,
		Example: "  baton delivery log 3\n  baton delivery log 3 --run 2 --raw\n  baton delivery log 3 --json | jq '.runs[] | {phase, cost_usd}'",
		Args:    exactArgs(1, "a delivery id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withDeliveries(ctx, f, *db, func(svc *delivery.Service) error {
				if n != 0 {
					r, err := svc.AgentRun(ctx, args[0], n)
					if err != nil {
						return err
					}
					if asJSON {
						return writeJSON(f.IO.Out, struct {
							SchemaVersion int            `json:"schema_version"`
							Delivery      string         `json:"delivery"`
							Run           baton.AgentRun `json:"run"`
						}{1, r.DeliveryID, r})
					}
					return printRun(printable(f.IO.Out), r, raw)
				}
				det, err := svc.Get(ctx, args[0])
				if err != nil {
					return err
				}
				d, runs := det.Delivery, det.AgentRuns
				if asJSON {
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int              `json:"schema_version"`
						Delivery      string           `json:"delivery"`
						Runs          []baton.AgentRun `json:"runs"`
					}{1, d.ID, append([]baton.AgentRun{}, runs...)})
				}
				if len(runs) == 0 {
					fmt.Fprintf(f.IO.Err, "delivery %s has no agent runs yet\n", d.ID)
					return nil
				}
				tw := tabwriter.NewWriter(printable(f.IO.Out), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tPHASE\tATTEMPT\tSTATUS\tAGENT\tMODEL\tCOST\tTOKENS IN/OUT\tDURATION\tEXIT\tSTARTED")
				for _, r := range runs {
					fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.N, r.Phase, r.Attempt, r.Status, r.Agent, orNone(r.Model), costText(r.CostUSD),
						tokensText(r.InputTokens, r.OutputTokens, "%d/%d"), r.Duration.Round(time.Millisecond), r.ExitCode, r.StartedAt.UTC().Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&n, "run", 0, "the run to print")
	cmd.Flags().BoolVar(&raw, "raw", false, "also print the raw event log")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

// costText is an agent's cost; none reported is unknown ("—"), not
// free.
func costText(usd float64) string {
	if usd == 0 {
		return "—"
	}
	return fmt.Sprintf("$%.4f", usd)
}

// tokensText is an agent's tokens in format, "—" when it reported none.
func tokensText(in, out int64, format string) string {
	if in == 0 && out == 0 {
		return "—"
	}
	return fmt.Sprintf(format, in, out)
}

func printRun(w io.Writer, r baton.AgentRun, raw bool) error {
	w = printable(w)
	fmt.Fprintf(w, "run %d: %s attempt %d, %s, %s\n", r.N, r.Phase, r.Attempt, r.Agent, r.Status)
	fmt.Fprintf(w, "model %s, cost %s, tokens %s, %s, exit %d\n", orNone(r.Model), costText(r.CostUSD),
		tokensText(r.InputTokens, r.OutputTokens, "%d input / %d output"), r.Duration.Round(time.Millisecond), r.ExitCode)
	fmt.Fprintf(w, "started %s", r.StartedAt.UTC().Format(time.RFC3339))
	if !r.EndedAt.IsZero() {
		fmt.Fprintf(w, ", ended %s", r.EndedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	fmt.Fprintf(w, "\n## System prompt\n\n%s\n\n## Prompt\n\n%s\n## Final message\n\n%s\n", r.SystemPrompt, r.Prompt, orNone(r.FinalMessage))
	if r.LogDir == "" {
		return nil
	}
	fmt.Fprintf(w, "\n## Logs\n\n%s\n", r.LogDir)
	logs := delivery.LogFiles(r)
	for _, l := range logs {
		fmt.Fprintf(w, "- %s (%d bytes)\n", l.Name, l.Size)
	}
	if !raw {
		return nil
	}
	for _, l := range logs {
		if l.Name == delivery.StderrLog {
			continue
		}
		fmt.Fprintf(w, "\n## %s\n\n", l.Name)
		fh, err := os.Open(l.Path)
		if err != nil {
			return err
		}
		err = copyLines(w, fh)
		fh.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
