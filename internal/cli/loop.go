package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/transcript"
)

func newLoopCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loop",
		Short: "Start, list and steer loops that repeat a prompt until a promise",
		Long: `A loop repeats its prompt at every Stop of the agent's session until the agent
states one of the loop's promises inside <promise>…</promise> tags, or the
iteration limit is reached. Loops live in .agent/context/loops/<id>.md. Each
session has its own foreground loop (the one its Stop hook continues), named
in this machine's own directory of the store (.agent/context/indexes/machine-*),
so two sessions in one project can each run a loop. A loop is bound to one
session: a Stop from another session never advances it. Ending a loop marks it
done or cancelled with its outcome; nothing is deleted.

A loop that came with the repository (a clone, a pull, an unpacked archive),
or whose prompt or verify commands a checkout changed after this machine
started or adopted it, is foreign: baton gives its prompt to no agent and runs
none of its commands until you read them ("baton loop show ID") and adopt it
("baton loop adopt ID"), or start a loop of your own from it (--from-loop).

Iterations count rounds of work: the round that starts the loop is 1, and
each Stop the hook continues adds one. With --max-iterations 20 the agent
works at most 20 rounds.`,
		Example: `  baton loop start "Make go test ./... pass" --max-iterations 10 --promise DONE --promise BLOCKED
  baton loop start --from-packet latest
  baton loop status
  baton loop cancel`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newLoopStartCmd(f),
		newLoopListCmd(f),
		newLoopStatusCmd(f),
		newLoopActivateCmd(f),
		newLoopAdoptCmd(f),
		newLoopSetStatusCmd(f, "pause", "Pause a loop: the Stop hook lets the agent stop until it is resumed"),
		newLoopSetStatusCmd(f, "resume", "Resume a paused loop"),
		newLoopSetStatusCmd(f, "cancel", "Cancel a loop (status cancelled, outcome cancelled; the file stays)"),
	)
	return cmd
}

// loopView is l as --json prints it (loop.View), with its prompt or
// without.
func loopView(st *fsstore.Store, l *baton.Loop, fg fsstore.Foreground, withPrompt bool, now time.Time) loop.View {
	path, _ := st.LoopPath(l.ID)
	if withPrompt {
		return loop.NewView(l, path, fg, now)
	}
	return loop.NewListItem(l, path, fg, now)
}

type loopStartOptions struct {
	fromPacket    string
	fromLoop      string
	promptFile    string
	maxIterations int
	promises      []string
	asJSON        bool
	verify        []string
	verifyTimeout time.Duration
	// verifyTimeoutSet: --verify-timeout was given, so it is kept even
	// when it equals today's default.
	verifyTimeoutSet bool
	budgets          loopBudgetFlags
	stallRounds      int
}

// loopBudgetFlags are --max-tokens, --max-cost and --max-duration (start
// and resume).
type loopBudgetFlags struct {
	tokens   int64
	cost     float64
	duration time.Duration
}

func (b *loopBudgetFlags) register(fl *pflag.FlagSet, verb string) {
	fl.Int64Var(&b.tokens, "max-tokens", 0, verb+" at `N` tokens (input, cached input and output) spent by the loop's session; 0: no limit")
	fl.Float64Var(&b.cost, "max-cost", 0, verb+" at `USD` spent (tokens at the model's price; BATON_MODEL_PRICES adds prices); 0: no limit")
	fl.DurationVar(&b.duration, "max-duration", 0, verb+" after the loop has been active `D` (90m, 2h; paused time does not count); 0: no limit")
}

func (b loopBudgetFlags) check() error {
	if b.tokens < 0 || b.cost < 0 || b.duration < 0 {
		return usageError("--max-tokens, --max-cost and --max-duration must be 0 (no limit) or more")
	}
	return nil
}

func newLoopStartCmd(f *Factory) *cobra.Command {
	var o loopStartOptions
	cmd := &cobra.Command{
		Use:   "start <prompt...> | --from-packet ID | --from-loop ID | --prompt-file F",
		Short: "Start a loop and make it the foreground loop",
		Long: `Create a loop from a prompt and make it the foreground loop, at iteration 1.

The prompt is the arguments joined by spaces, a file (--prompt-file F, or - for
stdin, which keeps multi-line prompts and special characters intact), or a
packet's Next Prompt (--from-packet ID|prefix|latest; the packet's loop_promise
and loop_max_iterations are the defaults), or another loop's prompt
(--from-loop ID|prefix, with its promises, limits and verify commands unless
flags set them): a new loop of yours, made from one the repository carried. Flags take "--flag value" or
"--flag=value"; an unknown flag is an error, never prompt text (put "--" before
a prompt that starts with a dash).

--promise may be given several times for several outcomes (DONE, BLOCKED, ...);
the default is DONE. The agent ends the loop by writing <promise>DONE</promise>.
--max-iterations defaults to 20; 0 means no limit and is warned about.

--verify CMD (repeatable) makes the promise checkable: when the agent states
it, the Stop hook runs each command (sh -c, in the project root, confined like
every command that runs an agent's code: the project and its own TMPDIR
writable, the system readable) within --verify-timeout (default 5m, at most
10m, all commands together). All pass: the loop is done. One fails: the loop
goes on, and the next round's prompt ends with a "Failure" section giving the
command and the end of its output. --from-packet takes the packet's
validators unless --verify is given.

--max-tokens, --max-cost and --max-duration bound what the loop may spend, as
the session's transcript reports it; at a bound the loop pauses with the
reason, and "baton loop resume --max-tokens N" (or --max-cost, --max-duration)
continues with more. --max-cost prices tokens at the list prices in
docs/hooks.md#prices (BATON_MODEL_PRICES adds others); it warns when the
session's model, or a model earlier loops here ran on, has no price.

A loop that makes no progress pauses too: --stall-rounds N (default 3) rounds
in a row with no tool call the round before did not make, and the same
verification failure if any, pause it with the reason; "baton loop resume"
continues it for N rounds more.

Run from an agent's shell, the loop is bound to that agent's session, which
the harness names there (Codex: CODEX_THREAD_ID; pi: PI_SESSION_ID; Claude
Code: CLAUDE_CODE_SESSION_ID; Claude Code and Droid: BATON_SESSION_ID, which
baton's session-start exports), so concurrent sessions each keep their own
loop. Run elsewhere, it binds to the first session whose Stop it sees.`,
		Example: `  baton loop start "Make go test ./... pass; fix one failure per round" --max-iterations=10
  baton loop start --from-packet latest --promise DONE --promise BLOCKED
  baton loop start --prompt-file - <<'EOF'
  Port the remaining handlers.
  ---
  One handler per round; run the tests after each.
  EOF`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.maxIterations = -1 // unset: the packet's limit, else the default
			if cmd.Flags().Changed("max-iterations") {
				v, _ := cmd.Flags().GetInt("max-iterations")
				if v < 0 {
					return usageError("--max-iterations must be 0 (no limit) or more, got %d", v)
				}
				o.maxIterations = v
			}
			o.verifyTimeoutSet = cmd.Flags().Changed("verify-timeout")
			return runLoopStart(cmd.Context(), f, args, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.fromPacket, "from-packet", "", "use `PACKET`'s Next Prompt (id, prefix or latest)")
	fl.StringVar(&o.fromLoop, "from-loop", "", "start afresh from `LOOP`'s prompt, promises, limits and verify commands (id or prefix)")
	fl.StringVar(&o.promptFile, "prompt-file", "", "read the prompt from `FILE` (- for stdin)")
	fl.Int("max-iterations", baton.DefaultLoopMaxIterations, "stop after `N` rounds (0 = no limit)")
	fl.StringArrayVar(&o.promises, "promise", nil, "a completion promise `TEXT` (repeatable: DONE, BLOCKED, ...)")
	fl.BoolVar(&o.asJSON, "json", false, "print the loop as JSON")
	fl.StringArrayVar(&o.verify, "verify", nil, "a `CMD` that must pass before a promise ends the loop (repeatable; sh -c in the project root, confined)")
	fl.DurationVar(&o.verifyTimeout, "verify-timeout", baton.DefaultVerifyTimeout, "how long the verify commands may take together, at most 10m (`D`)")
	o.budgets.register(fl, "pause")
	fl.IntVar(&o.stallRounds, "stall-rounds", 0, fmt.Sprintf("pause after `N` rounds in a row without progress (0: the default, %d)", baton.DefaultStallRounds))
	return cmd
}

func runLoopStart(ctx context.Context, f *Factory, args []string, o loopStartOptions) error {
	sources := 0
	for _, set := range []bool{len(args) > 0, o.fromPacket != "", o.fromLoop != "", o.promptFile != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources == 0:
		return usageError("baton loop start needs a prompt: give it as arguments, --prompt-file FILE (- for stdin), --from-packet latest or --from-loop ID")
	case sources > 1:
		return usageError("give the prompt one way: arguments, --prompt-file, --from-packet or --from-loop")
	}
	for _, p := range o.promises {
		if loop.Normalize(p) == "" {
			return usageError("--promise must not be empty")
		}
	}
	st, err := f.ensureStore(ctx)
	if err != nil {
		return err
	}
	if err := o.budgets.check(); err != nil {
		return err
	}
	if err := baton.CheckVerify(o.verify, o.verifyTimeout); err != nil {
		return usageError("--verify, --verify-timeout: %s", baton.ErrorMessage(err))
	}
	if err := baton.CheckStallRounds(o.stallRounds); err != nil {
		return usageError("--stall-rounds: %s", baton.ErrorMessage(err))
	}
	sess := f.session(st)
	verifyTimeout := o.verifyTimeout
	if !o.verifyTimeoutSet {
		verifyTimeout = 0 // the default, whatever it becomes
	}
	req := loop.StartRequest{FromPacket: o.fromPacket, FromLoop: o.fromLoop, MaxIterations: o.maxIterations, Promises: o.promises, SessionID: sess.ID,
		Verify: o.verify, VerifyTimeout: verifyTimeout, MaxTokens: o.budgets.tokens, MaxCostUSD: o.budgets.cost, MaxDuration: o.budgets.duration, StallRounds: o.stallRounds, Now: f.now()}
	if sess.ID != "" && sess.TranscriptPath != "" {
		// Started in a session that knows its transcript: only what the
		// session spends from now on is the loop's.
		h, _ := harness.Lookup(string(sess.Harness))
		c := transcript.StartCursor(sess.TranscriptPath, h != nil && h.UsageBeside, f.now())
		req.Usage = &c
	}
	switch {
	case len(args) > 0:
		req.Prompt = strings.Join(args, " ")
	case o.promptFile != "":
		if req.Prompt, err = readPromptFile(f, o.promptFile); err != nil {
			return err
		}
	}
	if req.FromPacket == "" && req.FromLoop == "" && strings.TrimSpace(req.Prompt) == "" {
		return usageError("the loop prompt is empty")
	}
	l, prev, err := loop.Start(ctx, st, req)
	if err != nil {
		return err
	}
	if l.MaxIterations == 0 {
		fmt.Fprintf(f.IO.Err, "baton: warning: loop %s has no iteration limit; it runs until a promise or `baton loop cancel %s`\n", l.ID, l.ID)
	}
	if l.MaxCostUSD > 0 {
		warnUnpriced(f, st, sess)
	}
	if prev != "" && prev != l.ID {
		if old, err := st.FindLoopByID(prev); err == nil && old.Status == baton.LoopActive {
			fmt.Fprintf(f.IO.Err, "baton: loop %s stays active but is no longer the foreground loop (switch back with `baton loop activate %s`)\n", prev, prev)
		}
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int `json:"schema_version"`
			loop.View
		}{1, loopView(st, l, f.foreground(st), true, f.now())})
	}
	bound := "it binds to the first session that stops"
	if l.SessionID != "" {
		bound = "bound to session " + l.SessionID
	}
	_, err = fmt.Fprintf(f.IO.Out, "baton loop %s started: iteration %s, %s.\nWork on the loop prompt now. When you stop, it comes back until you %s.\n",
		l.ID, loopProgress(l), bound, loop.HowToFinish(l))
	if b := loop.Budgets(l); err == nil && b != "" {
		_, err = fmt.Fprintf(f.IO.Out, "It pauses at %s (`baton loop resume` with higher budgets continues it).\n", b)
	}
	if err == nil && len(l.Verify) > 0 {
		_, err = fmt.Fprintf(f.IO.Out, "The promise is accepted only when these pass (in %s, within %s): %s\n", st.Root(), l.EffectiveVerifyTimeout(), strings.Join(quoteAll(l.Verify), ", "))
	}
	return err
}

// warnUnpriced says, for a loop given --max-cost, which models it may run
// on that baton has no price for: the session's so far, and those earlier
// loops here spent tokens on. Their tokens would cost nothing, and the
// budget would never bite.
func warnUnpriced(f *Factory, st *fsstore.Store, sess loop.Session) {
	prices, err := loop.PricesFromEnv(f.env)
	if err != nil {
		f.warnf("%v; the default prices apply", err)
	}
	var models []string
	if sess.TranscriptPath != "" {
		h, _ := harness.Lookup(string(sess.Harness))
		u, _, err := transcript.ReadUsage(sess.TranscriptPath, baton.UsageCursor{Path: sess.TranscriptPath},
			transcript.UsageOptions{MaxRead: 4 << 20, Droid: h != nil && h.UsageBeside, Now: f.now()})
		if err == nil {
			for m := range u.ByModel {
				if _, recorded := u.Recorded[m]; !recorded {
					models = append(models, m)
				}
			}
		}
	}
	seen, _ := loop.SeenUnpriced(st, prices) // a store that cannot be listed names none
	unpriced := prices.Unpriced(append(models, seen...))
	if len(unpriced) == 0 {
		return
	}
	f.warnf("--max-cost counts nothing for %s: baton has no price for it (docs/hooks.md#prices), so its tokens cost $0 and the budget would not bite; "+
		`set its list price (US dollars per million tokens) in the agent's environment with BATON_MODEL_PRICES='{"%s": {"input": <USD>, "output": <USD>}}', or bound the loop with --max-tokens`,
		strings.Join(unpriced, ", "), unpriced[0])
}

// readPromptFile reads a prompt from a file or stdin, verbatim but for
// trailing newlines.
func readPromptFile(f *Factory, src string) (string, error) {
	b, err := readInput(f, "--prompt-file", src)
	return strings.TrimRight(b, "\n"), err
}

func loopProgress(l *baton.Loop) string {
	if l.MaxIterations == 0 {
		return fmt.Sprintf("%d (no limit)", l.Iteration)
	}
	return fmt.Sprintf("%d/%d", l.Iteration, l.MaxIterations)
}

func newLoopListCmd(f *Factory) *cobra.Command {
	var asJSON bool
	var status string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List loops, most recently updated first",
		Long:    "List loops with their status, iteration, promises and session; * marks foreground loops (one per session, and one not bound yet), ! loops that came with the repository and do not run here until adopted (`baton loop adopt`).",
		Example: "  baton loop list\n  baton loop list --status active --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			filter := fsstore.LoopFilter{Status: baton.LoopStatus(status)}
			if status != "" && !filter.Status.Valid() {
				return usageError("--status %q is not one of active, paused, done, cancelled", status)
			}
			st := f.Store()
			fg := f.foreground(st)
			if asJSON {
				// Each loop whole (budgets, spend, verify commands), from
				// its file.
				views, warnings, err := loop.Views(st, filter, fg, f.now())
				if err != nil {
					return err
				}
				current, _ := loop.Foreground(st, f.session(st).ID)
				out := struct {
					SchemaVersion int `json:"schema_version"`
					// Foreground is the loop `current` names here.
					Foreground string `json:"foreground"`
					// ForegroundBySession is each session's foreground loop;
					// "" keys the unbound one.
					ForegroundBySession map[string]string `json:"foreground_by_session"`
					Loops               []loop.View       `json:"loops"`
					Skipped             []string          `json:"skipped"`
				}{SchemaVersion: 1, Foreground: current, ForegroundBySession: foregroundMap(fg), Loops: views, Skipped: []string{}}
				for _, w := range warnings {
					fmt.Fprintf(f.IO.Err, "baton: warning: skipped %v\n", w)
					out.Skipped = append(out.Skipped, w.Error())
				}
				return writeJSON(f.IO.Out, out)
			}
			// The table shows what the index holds.
			ls, warnings, err := st.ListLoops(filter)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintf(f.IO.Err, "baton: warning: skipped %v\n", w)
			}
			if len(ls) == 0 {
				fmt.Fprintln(f.IO.Err, "no loops: start one with `baton loop start <prompt>`")
				return nil
			}
			tw := tabwriter.NewWriter(printable(f.IO.Out), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\tID\tSTATUS\tITERATION\tPROMISES\tSESSION\tOUTCOME")
			foreign := 0
			for _, l := range ls {
				mark := ""
				if fg.Has(l.ID) {
					mark = "*"
				}
				if !l.Status.Ended() && !trusted(st, fg, l) {
					mark, foreign = "!", foreign+1
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, l.ID, l.Status, loopProgress(l), strings.Join(l.CompletionPromises, "|"), dash(l.SessionID), dash(l.Outcome))
			}
			if err := tw.Flush(); err != nil || foreign == 0 {
				return err
			}
			_, err = fmt.Fprintln(f.IO.Err, "! marks loops that came with the repository (or changed since this machine adopted them): they do not run here until you read them (`baton loop show ID`) and adopt them (`baton loop adopt ID`)")
			return err
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only loops with this `STATUS` (active, paused, done, cancelled)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newLoopStatusCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status [id|prefix|current]",
		Aliases: []string{"show"},
		Short:   "Show the foreground loop (or the named one)",
		Long: `Show a loop: status, iteration, promises, the session it is bound to, its
outcome and its prompt. Without an id it shows this session's foreground loop
(the session whose shell runs the command), else the unbound one, else the
only one.`,
		Example: "  baton loop status\n  baton loop show fix-tests --json",
		Args:    rangeArgs(0, 1, "at most one loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := f.Store()
			l, err := loop.Resolve(st, loopArg(args), f.session(st).ID)
			if errors.Is(err, loop.ErrNoForeground) {
				if asJSON {
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int        `json:"schema_version"`
						Loop          *loop.View `json:"loop"`
					}{1, nil})
				}
				_, err := fmt.Fprintln(f.IO.Out, "no foreground loop: start one with `baton loop start <prompt>` or pick one with `baton loop activate <id>`")
				return err
			}
			if err != nil {
				return err
			}
			j := loopView(st, l, f.foreground(st), true, f.now())
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int        `json:"schema_version"`
					Loop          *loop.View `json:"loop"`
				}{1, &j})
			}
			fgNote := ""
			if j.Foreground {
				fgNote = " (foreground)"
			}
			w := printable(f.IO.Out)
			fmt.Fprintf(w, "loop %s%s\n", l.ID, fgNote)
			if j.Foreign && !l.Status.Ended() {
				fmt.Fprintf(w, "  foreign:    came with the repository (or changed since this machine adopted it): its prompt is given to no agent and its commands run nowhere until `baton loop adopt %s`\n", l.ID)
			}
			fmt.Fprintf(w, "  status:     %s\n", l.Status)
			fmt.Fprintf(w, "  iteration:  %s\n", loopProgress(l))
			fmt.Fprintf(w, "  promises:   %s\n", dash(strings.Join(l.CompletionPromises, ", ")))
			fmt.Fprintf(w, "  session:    %s\n", firstNonEmpty(l.SessionID, "(binds to the first session that stops)"))
			if l.SourcePacketID != "" {
				fmt.Fprintf(w, "  packet:     %s\n", l.SourcePacketID)
			}
			if l.Outcome != "" {
				fmt.Fprintf(w, "  outcome:    %s\n", l.Outcome)
			}
			if l.PauseReason != "" {
				fmt.Fprintf(w, "  paused:     %s\n", l.PauseReason)
			}
			if len(l.Verify) > 0 {
				fmt.Fprintf(w, "  verify:     %s (within %s)\n", strings.Join(quoteAll(l.Verify), ", "), l.EffectiveVerifyTimeout())
			}
			for _, r := range l.VerifyRuns {
				fmt.Fprintf(w, "  verified:   %s\n", verifyRunLine(r))
			}
			fmt.Fprintf(w, "  spent:      %s\n", loop.SpendLine(l, f.now()))
			fmt.Fprintf(w, "  file:       %s\n", j.Path)
			if l.Status == baton.LoopActive {
				fmt.Fprintf(w, "  finish:     %s\n", loop.HowToFinish(l))
			}
			_, err = fmt.Fprintf(w, "\n%s\n", l.Prompt)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

// trusted reports whether this machine trusts l as it is; l may be an
// index entry without its prompt, so an adopted loop is read whole.
func trusted(st *fsstore.Store, fg fsstore.Foreground, l *baton.Loop) bool {
	if _, ok := fg.Adopted[l.ID]; !ok {
		return false
	}
	full, err := st.FindLoopByID(l.ID)
	return err == nil && fg.Trusts(full)
}

func newLoopAdoptCmd(f *Factory) *cobra.Command {
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "adopt <id|prefix>",
		Short: "Trust a loop that came with the repository, and make it the foreground loop",
		Long: `Show a loop's prompt and verify commands and, once you confirm, trust it on this
machine: the Stop hook then feeds its prompt to the agent and runs its verify
commands when the agent states its promise. A loop that came with the
repository (a clone, a pull, an unpacked archive), or whose prompt or commands
a checkout changed since this machine adopted it, runs nowhere until then, as
Codex and pi ask before they trust a project.

The loop is bound to this session (the agent's, when run from its shell), or to the next session
that stops, and becomes its foreground loop. Confirm with Enter at a terminal;
--yes adopts without asking (for scripts, once you have read the loop). Without
a terminal and without --yes it refuses: an agent's tool call adopts nothing.`,
		Example: "  baton loop adopt fix-tests\n  baton loop show fix-tests && baton loop adopt fix-tests --yes",
		Args:    exactArgs(1, "a loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := f.askTerminal(yes, "refusing to adopt without confirmation: stdin is not a terminal; read the loop with `baton loop show "+args[0]+"` and add --yes")
			if err != nil {
				return err
			}
			st := f.Store()
			session := f.session(st).ID
			l, err := loop.Resolve(st, args[0], session)
			if err != nil {
				return err
			}
			if l.Status.Ended() {
				return baton.Errorf(baton.Conflict, "loop %s is %s: nothing to adopt", l.ID, l.Status)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "loop %s (%s, iteration %s, promises %s)\n", l.ID, l.Status, loopProgress(l), dash(strings.Join(l.CompletionPromises, ", ")))
			fmt.Fprintf(&b, "Its prompt, given to the agent at every stop:\n\n%s\n\n", indent(l.Prompt))
			if len(l.Verify) > 0 {
				fmt.Fprintf(&b, "Its verify commands, run (sh -c, in %s, confined) when the agent states the promise:\n", st.Root())
				for _, v := range l.Verify {
					fmt.Fprintf(&b, "  %s\n", v)
				}
			} else {
				b.WriteString("It has no verify commands.\n")
			}
			summary := baton.StripControls(b.String())
			if err := f.ask(ctx, in, summary, "Press Enter to adopt it, or Esc (or any other key) to cancel. ", "canceled: the loop was not adopted"); err != nil {
				return err
			}
			l, prev, err := loop.Adopt(ctx, st, l.ID, session, f.now())
			if err != nil {
				return err
			}
			if asJSON {
				fg, _ := st.Foreground()
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int `json:"schema_version"`
					loop.View
				}{1, loopView(st, l, fg, true, f.now())})
			}
			bound := "it binds to the first session that stops"
			if l.SessionID != "" {
				bound = "bound to session " + l.SessionID
			}
			fmt.Fprintf(f.IO.Out, "adopted loop %s on this machine: it is the foreground loop, %s\n", l.ID, bound)
			if prev != "" && prev != l.ID {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is no longer the foreground loop (switch back with `baton loop activate %s`)\n", prev, prev)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "adopt without asking (you have read the loop)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the adopted loop as JSON")
	return cmd
}

// indent indents every line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// loopArg is the loop reference a command's optional argument gives:
// without one, the foreground loop.
func loopArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return loop.Current
}

// foreground is the foreground loops, for marking them; with a warning
// and none when the pointer cannot be read: named loops are shown anyway.
// session is the harness session the command runs in (loop.CurrentSession):
// the one a loop it starts binds to, and whose foreground loop it means.
func (f *Factory) session(st *fsstore.Store) loop.Session {
	return loop.CurrentSession(st, f.env)
}

func (f *Factory) foreground(st *fsstore.Store) fsstore.Foreground {
	fg, err := st.Foreground()
	if err != nil {
		f.warnf("%v", err)
	}
	return fg
}

// foregroundMap is fg as --json gives it: session id to loop id, "" for
// the unbound loop.
func foregroundMap(fg fsstore.Foreground) map[string]string {
	m := map[string]string{}
	for s, id := range fg.Sessions {
		m[s] = id
	}
	if fg.Unbound != "" {
		m[""] = fg.Unbound
	}
	return m
}

func newLoopActivateCmd(f *Factory) *cobra.Command {
	var rebind bool
	cmd := &cobra.Command{
		Use:   "activate <id|prefix>",
		Short: "Make a loop the foreground loop of its session",
		Long: `Make a loop the foreground loop of the session it is bound to (or the
unbound loop, which the next session that stops takes), so that session's Stop
hook continues it. Switching loops is always explicit: this is the only way,
besides starting a loop, to change a foreground loop. A paused loop stays
paused until "baton loop resume". --rebind moves the loop to the session
running the command (the agent's, from its shell), or unbinds it so the next session
that stops takes it: use it after /clear or in a new session.`,
		Example: "  baton loop activate 20261122T093400Z-fix-tests\n  baton loop activate fix-tests --rebind",
		Args:    exactArgs(1, "one loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st := f.Store()
			session := f.session(st).ID
			l, err := loop.Resolve(st, args[0], session)
			if err != nil {
				return err
			}
			l, prev, err := loop.Activate(ctx, st, l.ID, rebind, session, f.now())
			if err != nil {
				return err
			}
			whose := "the unbound loop: the next session that stops takes it"
			if l.SessionID != "" {
				whose = "the foreground loop of session " + l.SessionID
			}
			fmt.Fprintf(f.IO.Out, "loop %s is %s (%s, iteration %s)\n", l.ID, whose, l.Status, loopProgress(l))
			if prev != "" && prev != l.ID {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is no longer a foreground loop\n", prev)
			}
			if l.Status == baton.LoopPaused {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is paused: `baton loop resume %s` lets the Stop hook continue it\n", l.ID, l.ID)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&rebind, "rebind", false, "bind the loop to the session running the command, or unbind it")
	return cmd
}

func newLoopSetStatusCmd(f *Factory, verb, short string) *cobra.Command {
	var asJSON, rebind bool
	var budgets loopBudgetFlags
	long := short + `.

Without an id it acts on this session's foreground loop. pause: active ->
paused. resume: paused -> active (--rebind also moves it to this session).
cancel: active or paused -> cancelled, with outcome "cancelled"; a cancelled
loop stops being a foreground loop. Done and cancelled loops never change.`
	if verb == "resume" {
		long += `

A loop baton paused at a budget continues with more: --max-tokens,
--max-cost and --max-duration replace its budgets (0 removes one). Given to an
active loop, they only change its budgets.`
	}
	cmd := &cobra.Command{
		Use:     verb + " [id|prefix|current]",
		Short:   short,
		Long:    long,
		Example: "  baton loop " + verb + "\n  baton loop " + verb + " 20261122T093400Z-fix-tests",
		Args:    rangeArgs(0, 1, "at most one loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := budgets.check(); err != nil {
				return err
			}
			st := f.Store()
			session := f.session(st).ID
			l, err := loop.Resolve(st, loopArg(args), session)
			if err != nil {
				return err
			}
			change := loop.StatusChange{Change: loop.Change(verb), Rebind: rebind, Session: session, Now: f.now()}
			fl := cmd.Flags()
			if fl.Changed("max-tokens") {
				change.MaxTokens = &budgets.tokens
			}
			if fl.Changed("max-cost") {
				change.MaxCostUSD = &budgets.cost
			}
			if fl.Changed("max-duration") {
				change.MaxDuration = &budgets.duration
			}
			l, from, err := loop.SetStatus(ctx, st, l.ID, change)
			if err != nil {
				return err
			}
			fg := f.foreground(st)
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int `json:"schema_version"`
					loop.View
				}{1, loopView(st, l, fg, false, f.now())})
			}
			fmt.Fprintf(f.IO.Out, "loop %s: %s -> %s at iteration %s\n", l.ID, from, l.Status, loopProgress(l))
			if verb == "resume" && !fg.Has(l.ID) {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is not a foreground loop: `baton loop activate %s` makes its session's Stop hook continue it\n", l.ID, l.ID)
			}
			if reason := loop.OverBudget(l, f.now()); verb == "resume" && reason != "" {
				fmt.Fprintf(f.IO.Err, "baton: warning: loop %s pauses again at its next stop: %s\n", l.ID, reason)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the loop as JSON")
	if verb == "resume" {
		cmd.Flags().BoolVar(&rebind, "rebind", false, "bind the loop to the session running the command, or unbind it")
		budgets.register(cmd.Flags(), "pause")
	}
	return cmd
}

// quoteAll puts each command in backticks.
func quoteAll(cmds []string) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = "`" + c + "`"
	}
	return out
}

// verifyRunLine is one verification in a line: when, which iteration,
// and how each command ended.
func verifyRunLine(r baton.VerifyRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s iteration %d: ", baton.FormatTime(r.At), r.Iteration)
	switch {
	case r.Error != "":
		b.WriteString("could not run: " + r.Error)
		return b.String()
	case r.Passed:
		b.WriteString("passed")
	default:
		b.WriteString("failed")
	}
	for _, c := range r.Checks {
		status := fmt.Sprintf("exit %d", c.ExitCode)
		if c.TimedOut {
			status = "timed out"
		}
		conf := ""
		if !c.Confined {
			conf = ", not confined"
		}
		fmt.Fprintf(&b, "; `%s` %s in %s%s", c.Command, status, (time.Duration(c.DurationMS) * time.Millisecond).Round(10*time.Millisecond), conf)
	}
	return b.String()
}
