package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/loop"
)

func newLoopCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loop",
		Short: "Start, list and steer loops that repeat a prompt until a promise",
		Long: `A loop repeats its prompt at every Stop of the agent's session until the agent
states one of the loop's promises inside <promise>…</promise> tags, or the
iteration limit is reached. Loops live in .agent/context/loops/<id>.md; the
foreground loop (the one the Stop hook continues) is named in
.agent/context/indexes/active-loop.json. A loop is bound to one session: a
Stop from another session never advances it. Ending a loop marks it done or
cancelled with its outcome; nothing is deleted.

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
		newLoopSetStatusCmd(f, "pause", "Pause a loop: the Stop hook lets the agent stop until it is resumed"),
		newLoopSetStatusCmd(f, "resume", "Resume a paused loop"),
		newLoopSetStatusCmd(f, "cancel", "Cancel a loop (status cancelled, outcome cancelled; the file stays)"),
	)
	return cmd
}

// loopJSON is a loop as --json prints it.
type loopJSON struct {
	ID                 string   `json:"id"`
	Path               string   `json:"path"`
	Status             string   `json:"status"`
	Foreground         bool     `json:"foreground"`
	Iteration          int      `json:"iteration"`
	MaxIterations      int      `json:"max_iterations"`
	CompletionPromises []string `json:"completion_promises"`
	SessionID          string   `json:"session_id,omitempty"`
	SourcePacketID     string   `json:"source_packet_id,omitempty"`
	Outcome            string   `json:"outcome,omitempty"`
	ConsecutiveBlocks  int      `json:"consecutive_blocks"`
	CompactedPacket    string   `json:"compacted_packet,omitempty"`
	CreatedAt          string   `json:"created_at"`
	UpdatedAt          string   `json:"updated_at"`
	Prompt             string   `json:"prompt,omitempty"`
}

func toLoopJSON(st *fsstore.Store, l *baton.Loop, foreground string, withPrompt bool) loopJSON {
	path, _ := st.LoopPath(l.ID)
	j := loopJSON{
		ID: l.ID, Path: path, Status: string(l.Status), Foreground: l.ID == foreground,
		Iteration: l.Iteration, MaxIterations: l.MaxIterations, CompletionPromises: nonNilStrings(l.CompletionPromises),
		SessionID: l.SessionID, SourcePacketID: l.SourcePacketID, Outcome: l.Outcome, ConsecutiveBlocks: l.ConsecutiveBlocks,
		CompactedPacket: l.CompactedPacket,
		CreatedAt:       baton.FormatTime(l.CreatedAt), UpdatedAt: baton.FormatTime(l.UpdatedAt),
	}
	if withPrompt {
		j.Prompt = l.Prompt
	}
	return j
}

type loopStartOptions struct {
	fromPacket    string
	promptFile    string
	maxIterations int
	promises      []string
	asJSON        bool
}

func newLoopStartCmd(f *Factory) *cobra.Command {
	var o loopStartOptions
	cmd := &cobra.Command{
		Use:   "start <prompt...> | --from-packet ID | --prompt-file F",
		Short: "Start a loop and make it the foreground loop",
		Long: `Create a loop from a prompt and make it the foreground loop, at iteration 1.

The prompt is the arguments joined by spaces, a file (--prompt-file F, or - for
stdin, which keeps multi-line prompts and special characters intact), or a
packet's Next Prompt (--from-packet ID|prefix|latest; the packet's loop_promise
and loop_max_iterations are the defaults). Flags take "--flag value" or
"--flag=value"; an unknown flag is an error, never prompt text (put "--" before
a prompt that starts with a dash).

--promise may be given several times for several outcomes (DONE, BLOCKED, ...);
the default is DONE. The agent ends the loop by writing <promise>DONE</promise>.
--max-iterations defaults to 20; 0 means no limit and is warned about.

Inside an agent session whose session-start hook exported BATON_SESSION_ID,
the loop is bound to that session; otherwise it binds to the first session
whose Stop it sees.`,
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
			return runLoopStart(cmd.Context(), f, args, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.fromPacket, "from-packet", "", "use `PACKET`'s Next Prompt (id, prefix or latest)")
	fl.StringVar(&o.promptFile, "prompt-file", "", "read the prompt from `FILE` (- for stdin)")
	fl.Int("max-iterations", baton.DefaultLoopMaxIterations, "stop after `N` rounds (0 = no limit)")
	fl.StringArrayVar(&o.promises, "promise", nil, "a completion promise `TEXT` (repeatable: DONE, BLOCKED, ...)")
	fl.BoolVar(&o.asJSON, "json", false, "print the loop as JSON")
	return cmd
}

func runLoopStart(ctx context.Context, f *Factory, args []string, o loopStartOptions) error {
	sources := 0
	for _, set := range []bool{len(args) > 0, o.fromPacket != "", o.promptFile != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources == 0:
		return usageError("baton loop start needs a prompt: give it as arguments, --prompt-file FILE (- for stdin), or --from-packet latest")
	case sources > 1:
		return usageError("give the prompt one way: arguments, --prompt-file or --from-packet")
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
	req := loop.StartRequest{FromPacket: o.fromPacket, MaxIterations: o.maxIterations, Promises: o.promises, SessionID: f.env("BATON_SESSION_ID")}
	switch {
	case len(args) > 0:
		req.Prompt = strings.Join(args, " ")
	case o.promptFile != "":
		if req.Prompt, err = readPromptFile(f, o.promptFile); err != nil {
			return err
		}
	}
	if req.FromPacket == "" && strings.TrimSpace(req.Prompt) == "" {
		return usageError("the loop prompt is empty")
	}
	l, prev, err := loop.Start(ctx, st, req)
	if err != nil {
		return err
	}
	if l.MaxIterations == 0 {
		fmt.Fprintf(f.IO.Err, "baton: warning: loop %s has no iteration limit; it runs until a promise or `baton loop cancel %s`\n", l.ID, l.ID)
	}
	if prev != "" && prev != l.ID {
		if old, err := st.FindLoopByID(prev); err == nil && old.Status == baton.LoopActive {
			fmt.Fprintf(f.IO.Err, "baton: loop %s stays active but is no longer the foreground loop (switch back with `baton loop activate %s`)\n", prev, prev)
		}
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int `json:"schema_version"`
			loopJSON
		}{1, toLoopJSON(st, l, l.ID, true)})
	}
	bound := "it binds to the first session that stops"
	if l.SessionID != "" {
		bound = "bound to session " + l.SessionID
	}
	_, err = fmt.Fprintf(f.IO.Out, "baton loop %s started: iteration %s, %s.\nWork on the loop prompt now. When you stop, it comes back until you %s.\n",
		l.ID, loopProgress(l), bound, loop.HowToFinish(l))
	return err
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
		Long:    "List loops with their status, iteration, promises and session; * marks the foreground loop.",
		Example: "  baton loop list\n  baton loop list --status active --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			filter := fsstore.LoopFilter{Status: baton.LoopStatus(status)}
			if status != "" && !filter.Status.Valid() {
				return usageError("--status %q is not one of active, paused, done, cancelled", status)
			}
			st := f.Store()
			ls, warnings, err := st.ListLoops(filter)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintf(f.IO.Err, "baton: warning: skipped %v\n", w)
			}
			fg, err := st.ForegroundLoopID()
			if err != nil {
				fmt.Fprintf(f.IO.Err, "baton: warning: %v\n", err)
			}
			if asJSON {
				out := struct {
					SchemaVersion int        `json:"schema_version"`
					Foreground    string     `json:"foreground"`
					Loops         []loopJSON `json:"loops"`
					Skipped       []string   `json:"skipped"`
				}{SchemaVersion: 1, Foreground: fg, Loops: []loopJSON{}, Skipped: []string{}}
				for _, l := range ls {
					out.Loops = append(out.Loops, toLoopJSON(st, l, fg, false))
				}
				for _, w := range warnings {
					out.Skipped = append(out.Skipped, w.Error())
				}
				return writeJSON(f.IO.Out, out)
			}
			if len(ls) == 0 {
				fmt.Fprintln(f.IO.Err, "no loops: start one with `baton loop start <prompt>`")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\tID\tSTATUS\tITERATION\tPROMISES\tSESSION\tOUTCOME")
			for _, l := range ls {
				mark := ""
				if l.ID == fg {
					mark = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, l.ID, l.Status, loopProgress(l), strings.Join(l.CompletionPromises, "|"), dash(l.SessionID), dash(l.Outcome))
			}
			return tw.Flush()
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
		Use:   "status [id|prefix|current]",
		Short: "Show the foreground loop (or the named one)",
		Long: `Show a loop: status, iteration, promises, the session it is bound to, its
outcome and its prompt. Without an id it shows the foreground loop.`,
		Example: "  baton loop status\n  baton loop status fix-tests --json",
		Args:    rangeArgs(0, 1, "at most one loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := f.Store()
			l, err := loop.Resolve(st, loopArg(args))
			if errors.Is(err, loop.ErrNoForeground) {
				if asJSON {
					return writeJSON(f.IO.Out, struct {
						SchemaVersion int       `json:"schema_version"`
						Loop          *loopJSON `json:"loop"`
					}{1, nil})
				}
				_, err := fmt.Fprintln(f.IO.Out, "no foreground loop: start one with `baton loop start <prompt>` or pick one with `baton loop activate <id>`")
				return err
			}
			if err != nil {
				return err
			}
			fg := f.foregroundLoopID(st)
			j := toLoopJSON(st, l, fg, true)
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int       `json:"schema_version"`
					Loop          *loopJSON `json:"loop"`
				}{1, &j})
			}
			fgNote := ""
			if j.Foreground {
				fgNote = " (foreground)"
			}
			w := f.IO.Out
			fmt.Fprintf(w, "loop %s%s\n", l.ID, fgNote)
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

// loopArg is the loop reference a command's optional argument gives:
// without one, the foreground loop.
func loopArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return loop.Current
}

// foregroundLoopID is the foreground loop's id for marking it, or "" with
// a warning when the pointer cannot be read: a named loop is shown anyway.
func (f *Factory) foregroundLoopID(st *fsstore.Store) string {
	fg, err := st.ForegroundLoopID()
	if err != nil {
		f.warnf("%v", err)
	}
	return fg
}

func newLoopActivateCmd(f *Factory) *cobra.Command {
	var rebind bool
	cmd := &cobra.Command{
		Use:   "activate <id|prefix>",
		Short: "Make a loop the foreground loop",
		Long: `Point .agent/context/indexes/active-loop.json at a loop, so the Stop hook
continues it. Switching loops is always explicit: this is the only way,
besides starting a loop, to change the foreground loop. A paused loop stays
paused until "baton loop resume". --rebind moves the loop to the session
running the command (BATON_SESSION_ID), or unbinds it so the next session
that stops takes it: use it after /clear or in a new session.`,
		Example: "  baton loop activate 20261122T093400Z-fix-tests\n  baton loop activate fix-tests --rebind",
		Args:    exactArgs(1, "one loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st := f.Store()
			l, err := loop.Resolve(st, args[0])
			if err != nil {
				return err
			}
			if l.Status.Ended() {
				return baton.Errorf(baton.Conflict, "loop %s is %s (outcome %s): start a new loop with `baton loop start --from-packet` or a prompt", l.ID, l.Status, l.Outcome)
			}
			if rebind {
				if l, err = rebindLoop(ctx, f, st, l.ID); err != nil {
					return err
				}
			}
			prev, err := st.SetForegroundLoop(ctx, l.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "loop %s is the foreground loop (%s, iteration %s)\n", l.ID, l.Status, loopProgress(l))
			if prev != "" && prev != l.ID {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is no longer the foreground loop\n", prev)
			}
			if l.Status == baton.LoopPaused {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is paused: `baton loop resume %s` lets the Stop hook continue it\n", l.ID, l.ID)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&rebind, "rebind", false, "bind the loop to this session (BATON_SESSION_ID), or unbind it")
	return cmd
}

func rebindLoop(ctx context.Context, f *Factory, st *fsstore.Store, id string) (*baton.Loop, error) {
	sid := f.env("BATON_SESSION_ID")
	return st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
		l.SessionID = sid
		l.ConsecutiveBlocks = 0
		return nil
	})
}

func newLoopSetStatusCmd(f *Factory, verb, short string) *cobra.Command {
	var asJSON, rebind bool
	cmd := &cobra.Command{
		Use:   verb + " [id|prefix|current]",
		Short: short,
		Long: short + `.

Without an id it acts on the foreground loop. pause: active -> paused.
resume: paused -> active (--rebind also moves it to this session).
cancel: active or paused -> cancelled, with outcome "cancelled"; a cancelled
loop stops being the foreground loop. Done and cancelled loops never change.`,
		Example: "  baton loop " + verb + "\n  baton loop " + verb + " 20261122T093400Z-fix-tests",
		Args:    rangeArgs(0, 1, "at most one loop id or prefix"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st := f.Store()
			l, err := loop.Resolve(st, loopArg(args))
			if err != nil {
				return err
			}
			l, from, err := loop.SetStatus(ctx, st, l.ID, loop.Change(verb), rebind, f.env("BATON_SESSION_ID"), f.now().UTC())
			if err != nil {
				return err
			}
			fg := f.foregroundLoopID(st)
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int `json:"schema_version"`
					loopJSON
				}{1, toLoopJSON(st, l, fg, false)})
			}
			fmt.Fprintf(f.IO.Out, "loop %s: %s -> %s at iteration %s\n", l.ID, from, l.Status, loopProgress(l))
			if verb == "resume" && fg != l.ID {
				fmt.Fprintf(f.IO.Err, "baton: loop %s is not the foreground loop: `baton loop activate %s` makes the Stop hook continue it\n", l.ID, l.ID)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the loop as JSON")
	if verb == "resume" {
		cmd.Flags().BoolVar(&rebind, "rebind", false, "bind the loop to this session (BATON_SESSION_ID), or unbind it")
	}
	return cmd
}
