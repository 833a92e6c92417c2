package hook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/handoff"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/prompt"
	"github.com/baton-agent/baton/internal/safefile"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/transcript"
)

// sessionStart ensures the store, records the session, exports the
// session id to the agent's shell where the harness allows it, and
// returns the context to inject.
func (h handler) sessionStart(ctx context.Context) (harness.Result, error) {
	if !h.mayCreate && !h.st.Exists() {
		return harness.Result{}, baton.Errorf(baton.NotFound, "%s is not in a git repository and has no context store; baton creates one only inside a repository (run `baton init` there to use baton outside git)", h.st.Root())
	}
	if _, err := h.st.Init(ctx); err != nil {
		return harness.Result{}, err
	}
	rec := baton.SessionRecord{
		SessionID: h.p.SessionID, Harness: h.harness.Name, Source: h.p.Source,
		CWD: h.p.CWD, TranscriptPath: h.p.TranscriptPath, At: h.env.now().UTC(),
	}
	if err := h.st.AppendSession(ctx, rec); err != nil {
		h.warn("cannot record the session: %v", err)
	}
	if err := h.exportSession(); err != nil {
		// The context still goes out; the agent's commands just will not
		// know their session.
		h.warn("cannot write the session environment: %v", err)
	}
	afterCompact := h.p.Source == "compact"
	text, told, warnings, err := SessionContext(h.st, h.p.SessionID, afterCompact)
	if err != nil {
		return harness.Result{}, err
	}
	for _, l := range told {
		h.warn("loop %s came with the repository: baton does not run it; `baton loop show %s` shows its prompt and commands, `baton loop adopt %s` runs it here", l.ID, l.ID, l.ID)
	}
	if afterCompact {
		h.compactionTold(ctx)
	}
	for _, w := range warnings {
		h.warn("skipped %s", describe(w))
	}
	return harness.Result{Context: text}, nil
}

// compactionTold clears the foreground loop's pending compaction notice:
// the context just restated names the saved packet already.
func (h handler) compactionTold(ctx context.Context) {
	fg, err := h.st.ForegroundLoop(h.p.SessionID)
	if err != nil || fg == nil || fg.CompactedPacket == "" {
		return // the common case: nothing pending, no lock taken
	}
	_, err = h.st.UpdateLoop(ctx, fg.ID, func(l *baton.Loop) error {
		if l.CompactedPacket == "" || (l.SessionID != "" && l.SessionID != h.p.SessionID) {
			return fsstore.ErrUnchanged
		}
		l.CompactedPacket = ""
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.warn("cannot update loop %s: %v", fg.ID, err)
	}
}

// exportSession appends BATON_SESSION_ID and BATON_HARNESS to the
// harness's env file (Claude's CLAUDE_ENV_FILE), so baton commands the
// agent runs know their session.
func (h handler) exportSession() error {
	v := h.harness.EnvFileEnv
	if v == "" || h.p.SessionID == "" {
		return nil
	}
	path := h.env.getenv(v)
	if path == "" {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "export BATON_SESSION_ID=%s\n", harness.ShellQuote(h.p.SessionID))
	fmt.Fprintf(&b, "export BATON_HARNESS=%s\n", harness.ShellQuote(string(h.harness.Name)))
	if h.p.TranscriptPath != "" {
		fmt.Fprintf(&b, "export BATON_TRANSCRIPT_PATH=%s\n", harness.ShellQuote(h.p.TranscriptPath))
	}
	// O_NONBLOCK: a FIFO in its place fails at once instead of waiting
	// for a reader; anything but a regular file is refused.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s: %w", path, safefile.ErrNotRegular)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stop runs the loop engine on this session's foreground loop (its own,
// else the unbound one, which it then takes): it reads what the session
// spent since the last stop, verifies a stated promise when the loop has
// verify commands, and applies the stop under the loop's lock.
func (h handler) stop(ctx context.Context) (harness.Result, error) {
	if !h.st.Exists() {
		return harness.Result{}, h.errNoStore()
	}
	// A first look without the lock: most stops are not the loop's (another
	// session, a paused loop), and reading a transcript is the slow part.
	// Only a loop this machine trusts as it is continues (fsstore.Foreground).
	l, err := h.st.ForegroundLoop(h.p.SessionID)
	if err != nil || l == nil {
		return harness.Result{}, err
	}
	id := l.ID
	trusted := fsstore.LoopDigest(l)
	probe := *l
	if loop.Decide(&probe, loop.Stop{SessionID: h.p.SessionID, Known: true}).Action == loop.Ignore {
		return harness.Result{}, nil
	}
	now := h.env.now().UTC()
	in := loop.Stop{
		SessionID:      h.p.SessionID,
		StopHookActive: h.p.StopHookActive,
		BlockCap:       h.harness.StopBlockCap(h.env.Getenv),
		NewSession:     h.harness.NoResume,
		Now:            now,
	}
	in.Message, in.Known, err = h.lastAssistantText()
	if err != nil {
		fmt.Fprintf(h.env.Stderr, "baton hook stop (%s): cannot read the transcript (%v); treating the message as unknown\n", h.harness.Name, err)
	}
	h.readSpend(l, &in, now)
	if in.Known {
		if promise, ok := loop.NeedsVerify(l, in.Message); ok {
			// Minutes, perhaps: no lock is held meanwhile, and the locks
			// after it get their own time.
			run, failure := h.verify(l, promise)
			in.Verify, in.Failure = &run, failure
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(h.base, lockTimeout)
			defer cancel()
		}
	}
	var d loop.Decision
	bound := false
	_, err = h.st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
		if fsstore.LoopDigest(l) != trusted {
			// A checkout changed it meanwhile: not this machine's loop now.
			d = loop.Decision{}
			return fsstore.ErrUnchanged
		}
		was := l.SessionID
		d = loop.Decide(l, in)
		bound = was == "" && l.SessionID != ""
		if !d.Changed {
			return fsstore.ErrUnchanged
		}
		if d.Finished || d.Paused {
			// The session first: a note ending "… continues it in droid
			// session X" read as where to resume.
			l.Notes = loop.AppendNote(l.Notes, now, fmt.Sprintf("in %s session %s: %s", h.harness.Name, h.p.SessionID, strings.TrimPrefix(d.Message, "baton loop "+l.ID+": ")))
		}
		return nil
	})
	if baton.ErrorCode(err) == baton.NotFound {
		return harness.Result{}, nil
	} else if err != nil {
		return harness.Result{}, err
	}
	switch {
	case d.Finished:
		if _, err := h.st.ClearForegroundLoop(ctx, id); err != nil {
			return harness.Result{SystemMessage: d.Message}, nil // the loop is done; a stale pointer is harmless
		}
	case bound:
		// The unbound loop is this session's now; another session's stop
		// no longer finds it.
		if _, err := h.st.SetForegroundLoop(ctx, h.p.SessionID, l); err != nil {
			h.warn("cannot record loop %s as this session's: %v", id, err)
		}
	}
	switch d.Action {
	case loop.Block:
		return harness.Result{Block: true, Reason: d.Reason, SystemMessage: d.Message}, nil
	case loop.Allow:
		if d.Paused && h.harness.HidesStopMessage {
			// The person would never learn why the loop stopped: the
			// model says it, in one more round (the loop is paused, so
			// the stop after it is not the loop's).
			return harness.Result{Block: true, Reason: loop.RelayPause(d.Message), SystemMessage: d.Message}, nil
		}
		return harness.Result{SystemMessage: d.Message}, nil
	}
	return harness.Result{}, nil
}

// readSpend reads what the session spent since the loop's last stop from
// its transcript (only what is new), prices it, and puts it in in. A
// transcript it cannot read spends nothing this time, with a warning.
func (h handler) readSpend(l *baton.Loop, in *loop.Stop, now time.Time) {
	if h.p.TranscriptPath == "" {
		return
	}
	cur := l.Usage
	if cur.Since.IsZero() {
		cur.Since = l.ActiveSince
		if cur.Since.IsZero() {
			cur.Since = l.CreatedAt
		}
	}
	u, next, err := transcript.ReadUsage(h.p.TranscriptPath, cur, transcript.UsageOptions{Droid: h.harness.UsageBeside, Now: now})
	if err != nil {
		h.warn("cannot read the session's usage (%v); the loop's budgets count nothing this time", err)
		return
	}
	prices, err := loop.PricesFromEnv(h.env.Getenv)
	if err != nil {
		h.warn("%v; the default prices apply", err)
	}
	in.Spent = prices.Price(u.ByModel, u.Recorded)
	in.UsageFrom, in.Usage = l.Usage, &next
	if u.Read {
		in.Round = &baton.Round{Tools: u.Tools}
	}
}

// verify runs the loop's verify commands for promise in the project root,
// confined as every command that runs an agent's code is (the project and
// a temporary directory writable, the system readable; BATON_SANDBOX and
// its lists apply), within the loop's verify timeout.
func (h handler) verify(l *baton.Loop, promise string) (baton.VerifyRun, string) {
	conf, err := sandbox.Configure(h.env.Getenv, h.st.Root(), "", nil, nil)
	conf = conf.ForProject(h.st.Root())
	// The session's agent runs outside any box of baton's, with the
	// user's network: the commands that check its work get the same.
	conf.Network.Open = true
	if err != nil {
		return baton.VerifyRun{At: h.env.now().UTC().Truncate(time.Second), Iteration: l.Iteration, Promise: loop.Normalize(promise), Error: baton.ErrorMessage(err)}, ""
	}
	timeout := l.EffectiveVerifyTimeout()
	ctx, cancel := context.WithTimeout(h.base, timeout+proc.DefaultGrace+time.Second)
	defer cancel()
	return loop.Verify(ctx, loop.VerifyRequest{
		Commands: l.Verify, Dir: h.st.Root(), Timeout: timeout, Confine: conf,
		Env:       []string{"BATON_LOOP_ID=" + l.ID},
		Iteration: l.Iteration, Promise: promise, Now: h.env.now,
	})
}

// lastAssistantText takes the payload's last_assistant_message, else the
// transcript's last assistant message. known is false when neither has
// one.
func (h handler) lastAssistantText() (text string, known bool, err error) {
	if m := h.p.LastAssistantMessage; m != nil {
		return *m, true, nil
	}
	if h.p.TranscriptPath == "" {
		return "", false, nil
	}
	return transcript.LastAssistantText(h.p.TranscriptPath, transcript.Options{})
}

// postToolUse records the files a file-changing tool touched.
func (h handler) postToolUse(ctx context.Context) (harness.Result, error) {
	if !h.harness.IsWriteTool(h.p.ToolName) {
		return harness.Result{}, nil
	}
	paths := ChangedFiles(h.p.ToolInput, h.p.ToolResponse)
	if len(paths) == 0 {
		return harness.Result{}, nil
	}
	if !h.st.Exists() {
		return harness.Result{}, h.errNoStore()
	}
	base := h.p.CWD
	if base == "" || !filepath.IsAbs(base) {
		base = h.st.Root()
	}
	now := h.env.now().UTC()
	var entries []baton.RelevantFile
	for _, p := range paths {
		rel, ok := h.st.RelPath(base, p)
		if !ok || rel == fsstore.Dir || strings.HasPrefix(rel, fsstore.Dir+"/") {
			continue // outside the project, or baton's own files
		}
		entries = append(entries, baton.RelevantFile{Timestamp: now, FilePath: rel, Source: baton.FromTool, Confidence: 0.5})
	}
	return harness.Result{}, h.st.AppendRelevantFiles(ctx, entries...)
}

// maxLastText bounds the last assistant message a pre-compact packet keeps.
const maxLastText = 4000

// preCompact writes an automatic draft packet so compaction loses
// nothing, and notes the compaction on the foreground loop. It pauses
// nothing: the next Stop after compaction continues the loop as before.
func (h handler) preCompact(ctx context.Context) (harness.Result, error) {
	if !h.st.Exists() {
		return harness.Result{}, h.errNoStore()
	}
	h.st.WriteFollows()
	fg, _ := h.st.ForegroundLoop(h.p.SessionID)
	if fg != nil && (fg.Status != baton.LoopActive || (fg.SessionID != "" && fg.SessionID != h.p.SessionID)) {
		// Not this session's loop. The unbound loop counts: this session
		// takes it at its next stop unless it has a loop of its own.
		fg = nil
	}
	active := ActivePacket(h.st)
	purpose, next := "", ""
	switch {
	case fg != nil:
		first, _, _ := strings.Cut(strings.TrimSpace(fg.Prompt), "\n")
		purpose = "Continue loop " + fg.ID + ": " + first
		// Fenced, so "## " and "---" lines of the prompt stay in the packet's
		// Next Prompt instead of starting sections of their own.
		next = "Continue the foreground loop `" + fg.ID + "`. Its prompt, verbatim:\n\n" + fence(fg.Prompt)
	case active != nil:
		purpose = active.Purpose
		next = active.SectionText(baton.SectionNextPrompt)
	default:
		purpose = fmt.Sprintf("Continue %s session %s after compaction", h.harness.Name, h.p.SessionID)
	}
	trigger := h.p.Trigger
	if trigger == "" {
		trigger = "unknown"
	}
	var body strings.Builder
	fmt.Fprintf(&body, "## Context\n\nWritten by baton's pre-compact hook (trigger: %s) for %s session `%s`, so that compaction loses nothing.\n", trigger, h.harness.Name, h.p.SessionID)
	if last, ok, _ := h.lastAssistantText(); ok && strings.TrimSpace(last) != "" {
		fmt.Fprintf(&body, "\n### Last assistant message\n\n%s\n", baton.Truncate(strings.TrimSpace(last), maxLastText, prompt.TruncatedMarker))
	}
	if next != "" {
		fmt.Fprintf(&body, "\n## Next Prompt\n\n%s\n", next)
	}
	body.WriteString("\n## Notes\n\n")
	if fg != nil {
		fmt.Fprintf(&body, "- Foreground loop `%s` at iteration %d; it stays active and continues after compaction.\n", fg.ID, fg.Iteration)
	}
	if active != nil {
		fmt.Fprintf(&body, "- The work continues packet `%s`.\n", active.ID)
	}
	workDir := h.p.CWD
	if workDir == "" || !filepath.IsAbs(workDir) {
		workDir = h.st.Root()
	}
	res, err := handoff.Create(ctx, h.st, h.env.now(), handoff.Input{
		Purpose: oneLine(purpose), Body: body.String(),
		Source: string(h.harness.Name), SessionID: h.p.SessionID, TranscriptPath: h.p.TranscriptPath, WorkDir: workDir,
	})
	if err != nil {
		return harness.Result{}, err
	}
	if fg != nil {
		_, err := h.st.UpdateLoop(ctx, fg.ID, func(l *baton.Loop) error {
			l.Notes = loop.AppendNote(l.Notes, h.env.now().UTC(), fmt.Sprintf("compaction (%s) in %s session %s at iteration %d: packet %s", trigger, h.harness.Name, h.p.SessionID, l.Iteration, res.Packet.ID))
			// Until a source=compact session start restates it, the next
			// block names the packet (Droid sends none after compacting).
			l.CompactedPacket = res.Packet.ID
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return harness.Result{}, err
		}
	}
	return harness.Result{}, nil
}

// fence wraps s in a code fence it cannot close early.
func fence(s string) string {
	f := prompt.Fence(s)
	return f + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}
