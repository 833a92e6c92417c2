package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/handoff"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/prompt"
	"github.com/baton-agent/baton/internal/prompt/budget"
)

// maxBodyBytes bounds a handoff body read from a file or stdin.
const maxBodyBytes = 8 << 20

type handoffOptions struct {
	body           string
	nextPrompt     string
	files          []string
	validators     []string
	source         string
	sessionID      string
	transcriptPath string
	asJSON         bool
}

func newHandoffCmd(f *Factory) *cobra.Command {
	var o handoffOptions
	cmd := &cobra.Command{
		Use:   "handoff <purpose>",
		Short: "Write a draft handoff packet for the next session",
		Long: `Create a draft packet in .agent/context/packets/ and print its id.

The body (--body FILE, or --body - for stdin) is markdown with the packet's
headings; each "## " section it names fills that section:

  ## Intent, ## Context, ## Constraints, ## Decisions, ## Relevant Files
  (### Confirmed / ### Suggested), ## Next Prompt (Draft), ## Plan,
  ## Validators / Exit Criteria, ## Open Questions, ## Notes

Unknown sections are kept after the canonical ones; text before the first
heading goes to Notes. baton adds what it can know without guessing: the
git branch, HEAD and uncommitted files (in Context), the files agents
touched since the previous packet (Suggested), the files you name with
--file (Confirmed), and the session that ran it (--session-id, or the
session the harness names in its shell: Codex's CODEX_THREAD_ID, pi's
PI_SESSION_ID, Claude Code's CLAUDE_CODE_SESSION_ID, or BATON_SESSION_ID
that baton's session-start hook sets for Claude Code and Droid).

Pick the packet up in a new session with: baton pickup <id>`,
		Example: `  baton handoff "finish the auth refactor" --next-prompt "Run go test ./auth/... and fix the two failures"
  baton handoff "ship the parser" --file internal/parse/lexer.go --validator "go test ./..."
  cat notes.md | baton handoff "migrate the billing tables" --body -`,
		Args: minArgs(1, "a purpose (what the next session should achieve)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHandoff(cmd.Context(), f, strings.Join(args, " "), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.body, "body", "", "markdown `FILE` with packet sections, or - to read stdin")
	fl.StringVar(&o.nextPrompt, "next-prompt", "", "the prompt the next session starts from (replaces the body's Next Prompt)")
	fl.StringArrayVar(&o.files, "file", nil, "a confirmed relevant `PATH` (repeatable)")
	fl.StringArrayVar(&o.validators, "validator", nil, "a `COMMAND` that shows the work is done, e.g. \"go test ./...\" (repeatable)")
	fl.StringVar(&o.source, "source", "", "who writes the packet: claude, codex, droid, pi, user (default: BATON_HARNESS, else user)")
	fl.StringVar(&o.sessionID, "session-id", "", "the harness session id (default: the session this shell belongs to)")
	fl.StringVar(&o.transcriptPath, "transcript-path", "", "the session transcript (default: from the session log)")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func runHandoff(ctx context.Context, f *Factory, purpose string, o handoffOptions) error {
	body, err := readInput(f, "--body", o.body)
	if err != nil {
		return err
	}
	st, err := f.ensureStore(ctx)
	if err != nil {
		return err
	}
	st.WriteFollows()
	// Run from an agent's shell, the packet names the session it ran in
	// (every harness names it there: Codex and pi as well as Claude Code
	// and Droid); --session-id names another.
	var sess loop.Session
	if o.sessionID == "" {
		sess = f.session(st)
	}
	in := handoff.Input{
		Purpose: purpose, Body: body, NextPrompt: o.nextPrompt, Files: o.files, Validators: o.validators,
		Source:         firstNonEmpty(o.source, f.env("BATON_HARNESS"), string(sess.Harness), "user"),
		SessionID:      firstNonEmpty(o.sessionID, sess.ID),
		TranscriptPath: firstNonEmpty(o.transcriptPath, sess.TranscriptPath),
		WorkDir:        f.WorkDir,
	}
	if in.SessionID != "" && in.TranscriptPath == "" {
		if rec, err := st.FindSession(in.SessionID); err == nil {
			in.TranscriptPath = rec.TranscriptPath
		}
	}
	res, err := handoff.Create(ctx, st, f.now(), in)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(f.IO.Err, "baton: warning: %s\n", w)
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int      `json:"schema_version"`
			ID            string   `json:"id"`
			Path          string   `json:"path"`
			Status        string   `json:"status"`
			Confirmed     []string `json:"relevant_files_confirmed"`
			Suggested     []string `json:"relevant_files_suggested"`
			Warnings      []string `json:"warnings"`
		}{1, res.Packet.ID, res.Path, string(res.Packet.Status), res.Packet.RelevantFilesConfirmed, res.Packet.RelevantFilesSuggested, nonNilStrings(res.Warnings)})
	}
	fmt.Fprintf(f.IO.Err, "baton: wrote %s (pick it up with: baton pickup %s)\n", res.Path, res.Packet.ID)
	_, err = fmt.Fprintln(f.IO.Out, res.Packet.ID)
	return err
}

// readInput reads the file a flag names, or stdin for "-", up to
// maxBodyBytes; flag names the flag in errors.
func readInput(f *Factory, flag, src string) (string, error) {
	if src == "" {
		return "", nil
	}
	var r io.Reader
	if src == "-" {
		r = f.IO.In
	} else {
		fh, err := os.Open(src)
		if err != nil {
			return "", baton.WrapError(baton.Invalid, err, "cannot read %s %s", flag, src)
		}
		defer fh.Close()
		r = fh
	}
	b, err := io.ReadAll(io.LimitReader(r, maxBodyBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", flag, err)
	}
	if len(b) > maxBodyBytes {
		return "", baton.Errorf(baton.Invalid, "%s is over %d MiB", flag, maxBodyBytes>>20)
	}
	return string(b), nil
}

type pickupOptions struct {
	budget       int
	budgetTokens int
	explain      bool
	asJSON       bool
}

func newPickupCmd(f *Factory) *cobra.Command {
	var o pickupOptions
	cmd := &cobra.Command{
		Use:   "pickup [id|prefix|latest]",
		Short: "Render a packet as the prompt for the next session",
		Long: `Render a handoff packet as a prompt pack on stdout: the Next Prompt first,
then intent, context, constraints, decisions, relevant files (confirmed, then
suggested), plan, validators and open questions, a check of the repository
as it is now against what the packet recorded, and an instruction to trust
the repository where the two disagree.

The packet is named by its id, a unique prefix of the id (or of its slug),
or "latest" (the default): the most recently updated draft or active packet
(of packets updated in the same second, the one written last), else, saying
so, the most recently updated packet of any status (the same packet the
session-start hook shows). Packets that cannot be read are
skipped with a warning naming them. pickup never changes the packet; mark it
with "baton packet activate".

The prompt fits --budget bytes (default 40000): optional sections are
dropped first (notes, suggested files, context, ...), then the last section
that may be cut is truncated with a [truncated] marker. --explain reports
what was kept, dropped and cut on stderr.`,
		Example: `  baton pickup                      # the latest draft or active packet
  baton pickup 20261122T0934        # by id prefix
  baton pickup auth-refactor --budget 8000 --explain
  claude "$(baton pickup latest)"   # start a session from it`,
		Args: rangeArgs(0, 1, "at most one packet id, prefix or latest"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := "latest"
			if len(args) == 1 {
				ref = args[0]
			}
			return runPickup(cmd.Context(), f, ref, o)
		},
	}
	fl := cmd.Flags()
	sizeVar(fl, &o.budget, "budget", prompt.DefaultBudgetBytes, "the prompt's size limit: `SIZE` in bytes or with a unit (40KB, 40KiB)")
	fl.IntVar(&o.budgetTokens, "budget-tokens", 0, "also limit the prompt to `N` o200k_base tokens (counted offline)")
	fl.BoolVar(&o.explain, "explain", false, "report kept, dropped and truncated sections on stderr")
	fl.BoolVar(&o.asJSON, "json", false, "print the prompt and its report as JSON")
	return cmd
}

func runPickup(ctx context.Context, f *Factory, ref string, o pickupOptions) error {
	opts, err := budget.Parse(o.budget, o.budgetTokens)
	if err != nil {
		return err
	}
	picked, err := handoff.Pickup(ctx, f.Store(), ref, opts)
	if picked != nil {
		for _, w := range picked.Skipped {
			fmt.Fprintf(f.IO.Err, "baton: warning: skipped %v\n", w)
		}
	}
	if err != nil {
		return err
	}
	p, pack := picked.Packet, picked.Pack
	if picked.Fallback {
		fmt.Fprintf(f.IO.Err, "baton: no draft or active packet; picking up the most recently updated one, %s (%s)\n", p.ID, p.Status)
	}
	if o.explain {
		writeExplain(f.IO.Err, pack.Report)
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int           `json:"schema_version"`
			PacketID      string        `json:"packet_id"`
			Prompt        string        `json:"prompt"`
			Report        prompt.Report `json:"report"`
		}{1, p.ID, pack.Text, pack.Report})
	}
	_, err = io.WriteString(f.IO.Out, pack.Text)
	return err
}

// writeExplain prints a pack report as a small table.
func writeExplain(w io.Writer, r prompt.Report) {
	fmt.Fprintf(w, "prompt: %d of %d bytes", r.Bytes, r.BudgetBytes)
	if r.BudgetTokens > 0 {
		fmt.Fprintf(w, ", %d of %d tokens", r.Tokens, r.BudgetTokens)
	}
	fmt.Fprintln(w)
	for _, s := range r.Sections {
		kind := "droppable"
		switch {
		case s.Bookend:
			kind = "bookend"
		case s.Required:
			kind = "required"
		}
		fmt.Fprintf(w, "  %-10s %-28s %-9s %7d -> %d bytes\n", s.Outcome, s.Key, kind, s.Bytes, s.KeptBytes)
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
