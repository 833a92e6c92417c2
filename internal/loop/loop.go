// Package loop is baton's loop engine: what a Stop event does to the
// foreground loop. It is pure: Decide takes the loop as read under its
// lock and the facts of the Stop, changes the loop in memory and says
// whether to block, allow, or leave the loop alone. Callers persist the
// change (fsstore.UpdateLoop) and speak the harness's contract.
package loop

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// ExtractPromises returns the text of every <promise>…</promise> tag in
// msg, in order, each trimmed with inner whitespace collapsed to single
// spaces. Tag names are matched case-insensitively; a tag that is opened
// but never closed does not count, and neither does bare text equal to a
// promise. A tag written XML-escaped (&lt;promise&gt;) counts too: Codex
// escapes a stop hook's text in the prompt it gives the model, and a
// model that copies the promise from there writes it so.
func ExtractPromises(msg string) []string {
	const open, closing = "<promise>", "</promise>"
	msg = unescapeTags(msg)
	var out []string
	for i := 0; ; {
		s := indexFold(msg[i:], open)
		if s < 0 {
			return out
		}
		s += i + len(open)
		e := indexFold(msg[s:], closing)
		if e < 0 {
			return out
		}
		e += s
		// The innermost open tag before the close wins: "<promise>a
		// <promise>DONE</promise>" promises DONE.
		inner := msg[s:e]
		for k := indexFold(inner, open); k >= 0; k = indexFold(inner, open) {
			inner = inner[k+len(open):]
		}
		out = append(out, Normalize(inner))
		i = e + len(closing)
	}
}

// unescapeTags turns each XML-escaped promise tag in msg (any case)
// into its plain form; nothing else changes.
func unescapeTags(msg string) string {
	const escOpen, escClose = "&lt;promise&gt;", "&lt;/promise&gt;"
	if indexFold(msg, escOpen) < 0 && indexFold(msg, escClose) < 0 {
		return msg
	}
	var b strings.Builder
	for {
		o, c := indexFold(msg, escOpen), indexFold(msg, escClose)
		switch {
		case o < 0 && c < 0:
			b.WriteString(msg)
			return b.String()
		case c < 0 || (o >= 0 && o < c):
			b.WriteString(msg[:o] + "<promise>")
			msg = msg[o+len(escOpen):]
		default:
			b.WriteString(msg[:c] + "</promise>")
			msg = msg[c+len(escClose):]
		}
	}
}

// indexFold is strings.Index with ASCII case folding; sub is lower case.
// It works on bytes, so indexes stay valid in s whatever else s holds.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		k := strings.IndexByte(s[i:], sub[0]) // tags start with '<'
		if k < 0 {
			return -1
		}
		i += k
		if i+len(sub) > len(s) {
			return -1
		}
		j := 1
		for ; j < len(sub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return i
		}
	}
	return -1
}

// Normalize trims s and collapses every run of white space to one space,
// the form promises are compared in.
func Normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// MatchPromise returns the first configured promise (as configured) that
// any promise tag in msg states, compared literally after Normalize.
func MatchPromise(promises []string, msg string) (string, bool) {
	if len(promises) == 0 {
		return "", false
	}
	stated := ExtractPromises(msg)
	for _, p := range promises {
		np := Normalize(p)
		if np == "" {
			continue
		}
		for _, s := range stated {
			if s == np {
				return p, true
			}
		}
	}
	return "", false
}

// Stop is what the harness told baton about one Stop event.
type Stop struct {
	SessionID string
	// Message is the last assistant text; Known is false when neither the
	// payload nor the transcript gave one. An unknown or empty message
	// means "not finished": the loop goes on, nothing is deleted.
	Message string
	Known   bool
	// StopHookActive is true when the agent is already continuing because
	// of a stop hook's block.
	StopHookActive bool
	// BlockCap is how many consecutive blocks the harness honours before
	// it ends the turn anyway (Claude Code: 8); 0 means no known cap.
	BlockCap int
	// NewSession: the harness cannot resume this session later (Droid on
	// a BYOK model or offline), so a paused loop is resumed into the next
	// session instead (`loop resume --rebind`), and its pause says so.
	NewSession bool
	// Now is when the stop happened: the loop's active time is counted to
	// it. Zero leaves time out (no duration budget is checked).
	Now time.Time
	// Verify is the verification of the promise Message states, when the
	// loop has verify commands; nil when it did not run. Failure is what
	// the next round is told when it failed: the command and the end of
	// its output.
	Verify  *baton.VerifyRun
	Failure string
	// Spent is what the session spent since Usage, the loop's cursor
	// before this stop; Usage is the cursor after it. The spend is added
	// only while the loop's cursor is still the one it was read from, so
	// no usage counts twice.
	Spent     baton.Spend
	UsageFrom baton.UsageCursor
	Usage     *baton.UsageCursor
	// Round is what the session did since the loop's last stop (its tool
	// calls), read with the usage from UsageFrom, for the stall rule; nil
	// when it is not known (no transcript was read), and then the stop
	// does not count as a round.
	Round *baton.Round
}

// NeedsVerify reports whether msg states one of l's promises and l has
// verify commands to run before it is believed.
func NeedsVerify(l *baton.Loop, msg string) (promise string, ok bool) {
	if len(l.Verify) == 0 {
		return "", false
	}
	return MatchPromise(l.CompletionPromises, msg)
}

// Action is what the Stop hook answers.
type Action int

const (
	// Ignore: not this loop's business (no foreground loop, not active,
	// another session). No output, no change.
	Ignore Action = iota
	// Allow the stop. The loop changed (it finished) or the block cap was
	// reached; Message says so.
	Allow
	// Block the stop and feed Reason (the loop prompt) as the next
	// instruction.
	Block
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Block:
		return "block"
	}
	return "ignore"
}

// Decision is the engine's answer for one Stop.
type Decision struct {
	Action  Action
	Reason  string // the loop prompt, verbatim, when blocking
	Message string // one line for the user (systemMessage)
	// Changed says whether Decide changed the loop and it must be written.
	Changed bool
	// Finished is true when the loop ended (status done); the caller
	// clears the foreground pointer.
	Finished bool
	// Paused is true when baton paused the loop (a budget, a verification
	// that could not run); it stays its session's foreground loop.
	Paused bool
}

// Decide applies one Stop to l, the foreground loop as read under its
// lock (nil when there is none), and returns what to answer. The rules,
// in order:
//
//  1. No loop, or a loop that is not active: ignore.
//  2. A loop bound to another session: ignore; the loop is untouched. An
//     unbound loop is bound to the first session that stops.
//  3. A new turn (stop_hook_active false) resets the consecutive-block
//     count. What the session spent since the last stop is added.
//  4. A promise tag that states one of the loop's promises: done, with
//     that promise as the outcome, unless the loop has verify commands:
//     then only when they all passed. A verification that could not run
//     pauses the loop; one that failed is the next round's Failure.
//  5. The iteration limit reached: done, outcome max_iterations. Allow.
//  6. A budget (tokens, cost, active time) reached: paused, with the
//     reason in one line. Allow.
//  7. StallRounds rounds in a row without progress (baton.Stall.Next:
//     no new tool call, the same failed verification): paused, with the
//     reason in one line. Allow.
//  8. The harness's block cap reached in this chain: allow, and leave the
//     loop active at its iteration so the next turn picks it up.
//  9. Otherwise increment the iteration and block with the loop prompt,
//     followed by the failed verification's Failure section, and once by
//     the packet a compaction saved if nothing has named it to the agent.
func Decide(l *baton.Loop, s Stop) Decision {
	if l == nil || l.Status != baton.LoopActive {
		return Decision{Action: Ignore}
	}
	var d Decision
	switch {
	case l.SessionID == "" && s.SessionID != "":
		l.SessionID = s.SessionID
		d.Changed = true
	case l.SessionID != s.SessionID:
		// Bound elsewhere, or a payload without a session id: a loop never
		// moves to a session it cannot name.
		return Decision{Action: Ignore}
	}
	if !s.StopHookActive && l.ConsecutiveBlocks != 0 {
		l.ConsecutiveBlocks = 0
		d.Changed = true
	}
	if !s.Now.IsZero() && l.ActiveSince.IsZero() {
		l.ActiveSince = s.Now // a loop from before budgets: its clock starts now
		d.Changed = true
	}
	// The round counts, as the spend does, only when the loop's cursor is
	// still where it was read from: no stop's tool calls count twice.
	fresh := s.Usage != nil && cursorEqual(l.Usage, s.UsageFrom)
	if fresh {
		l.Spent = AddSpend(l.Spent, s.Spent)
		l.Usage = *s.Usage
		d.Changed = true
	}
	failure := ""
	if s.Known {
		if p, ok := MatchPromise(l.CompletionPromises, s.Message); ok {
			switch v := s.Verify; {
			case len(l.Verify) == 0:
				return finish(l, s.Now, p, fmt.Sprintf("baton loop %s: done (%s) at iteration %s", l.ID, Normalize(p), progress(l)))
			case v == nil:
				// Verification did not run: the promise is not believed, and the
				// round counts as any other.
				failure = "You stated the promise " + strconv.Quote(Normalize(p)) + ", but the loop's verify commands did not run, so the promise is not accepted yet. State it again when the work is done."
			default:
				recordRun(l, *v)
				switch {
				case v.Error != "":
					return pause(l, s, "its verification could not run: "+v.Error)
				case v.Passed:
					return finish(l, s.Now, p, fmt.Sprintf("baton loop %s: done (%s) at iteration %s, verified (%s)", l.ID, Normalize(p), progress(l), checksLine(v)))
				}
				failure = s.Failure
				if failure == "" {
					failure = "You stated the promise " + strconv.Quote(Normalize(p)) + ", but the loop's verification failed, so the loop goes on."
				}
			}
		}
	}
	if l.MaxIterations > 0 && l.Iteration >= l.MaxIterations {
		msg := fmt.Sprintf("baton loop %s: stopped after %d iterations (the limit) without a promise; the loop is done, outcome max_iterations", l.ID, l.Iteration)
		if failure != "" {
			msg = fmt.Sprintf("baton loop %s: stopped after %d iterations (the limit); the last promise failed its verification; the loop is done, outcome max_iterations", l.ID, l.Iteration)
		}
		return finish(l, s.Now, baton.OutcomeMaxIterations, msg)
	}
	if reason := OverBudget(l, s.Now); reason != "" {
		return pause(l, s, reason)
	}
	if s.Round != nil && fresh {
		r := *s.Round
		if failure != "" {
			r.Check = baton.Digest(failure)
		}
		var why string
		l.Stall, why = l.Stall.Next(r, l.StallRounds)
		d.Changed = true
		if why != "" {
			return pause(l, s, "it stalled: "+why)
		}
	}
	if s.StopHookActive && s.BlockCap > 0 && l.ConsecutiveBlocks >= s.BlockCap {
		d.Action = Allow
		d.Message = fmt.Sprintf("baton loop %s: paused for this turn at iteration %s after %d consecutive stop-hook blocks (the harness's cap); the loop stays active: send any message to continue, or run `baton loop cancel %s`", l.ID, progress(l), l.ConsecutiveBlocks, l.ID)
		if failure != "" {
			d.Message += "; the last promise failed its verification"
		}
		return d
	}
	l.Iteration++
	l.ConsecutiveBlocks++
	reason := strings.TrimRight(l.Prompt, "\n")
	if failure != "" {
		reason += "\n\n## Failure\n\n" + strings.TrimRight(failure, "\n")
	}
	if l.CompactedPacket != "" {
		reason += "\n\n" + CompactedLine(l.CompactedPacket)
		l.CompactedPacket = ""
	}
	if reason == strings.TrimRight(l.Prompt, "\n") {
		reason = l.Prompt // verbatim when nothing was added
	}
	return Decision{Action: Block, Reason: reason, Message: StatusLine(l), Changed: true}
}

// recordRun keeps run as the loop's newest verification, and at most
// MaxVerifyRuns of them.
func recordRun(l *baton.Loop, run baton.VerifyRun) {
	l.VerifyRuns = append(l.VerifyRuns, run)
	if n := len(l.VerifyRuns); n > baton.MaxVerifyRuns {
		l.VerifyRuns = append([]baton.VerifyRun(nil), l.VerifyRuns[n-baton.MaxVerifyRuns:]...)
	}
}

// checksLine says how many commands passed.
func checksLine(v *baton.VerifyRun) string {
	if len(v.Checks) == 1 {
		return "1 command passed"
	}
	return fmt.Sprintf("%d commands passed", len(v.Checks))
}

// pause stops the loop for a reason of baton's own: it stays its
// session's foreground loop, and `baton loop resume` continues it.
func pause(l *baton.Loop, s Stop, reason string) Decision {
	l.Status = baton.LoopPaused
	l.PauseReason = oneLine(reason)
	resume := fmt.Sprintf("`baton loop resume %s` continues it", l.ID)
	if s.NewSession {
		// Kept in the reason, which loop show and status print: the person
		// looks there, and the session's own output may not show the line.
		l.PauseReason += fmt.Sprintf("; this session may not be resumable, so run `baton loop resume %s --rebind` outside it (with any budget flag above) and the next session that stops continues the loop", l.ID)
		resume = ""
	}
	l.ConsecutiveBlocks = 0
	if !s.Now.IsZero() {
		l.StopClock(s.Now)
	}
	msg := fmt.Sprintf("baton loop %s: paused at iteration %s: %s", l.ID, progress(l), l.PauseReason)
	if resume != "" {
		msg += "; " + resume
	}
	return Decision{Action: Allow, Changed: true, Paused: true, Message: msg}
}

// RelayPause asks the model to pass a pause note on to the person, for a
// harness that would not show it: the loop is paused, so the model is to
// do no more of its work, only say the note.
func RelayPause(note string) string {
	return "Stop working on the loop: baton paused it, and the person running you has not seen why. " +
		"Reply with only this line, as written, and end your turn:\n\n" + note
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = baton.Truncate(s, 300, "…")
	}
	return s
}

// CompactedLine tells the agent, after a compaction, where the context it
// lost was saved.
func CompactedLine(packetID string) string {
	return "(baton: the conversation was compacted; what it held is saved in packet " + packetID + ", `baton pickup " + packetID + "` renders it.)"
}

func finish(l *baton.Loop, now time.Time, outcome, msg string) Decision {
	l.Status = baton.LoopDone
	l.Outcome = outcome
	l.ConsecutiveBlocks = 0
	if !now.IsZero() {
		l.StopClock(now)
	}
	return Decision{Action: Allow, Message: msg, Changed: true, Finished: true}
}

// StatusLine is the one line shown beside a block: the iteration and how
// to finish.
func StatusLine(l *baton.Loop) string {
	return fmt.Sprintf("baton loop %s: iteration %s — %s", l.ID, progress(l), HowToFinish(l))
}

// HowToFinish tells the agent how to end the loop.
func HowToFinish(l *baton.Loop) string {
	var ps []string
	for _, p := range l.CompletionPromises {
		if n := Normalize(p); n != "" {
			ps = append(ps, n)
		}
	}
	if len(ps) == 0 {
		return "no completion promise: it ends at the iteration limit or with `baton loop cancel " + l.ID + "`"
	}
	s := "finish with <promise>" + ps[0] + "</promise>"
	if len(ps) > 1 {
		s += " (or " + strings.Join(ps[1:], ", ") + ")"
	}
	if len(l.Verify) > 0 {
		// The agent should know its promise is checked, and by what.
		s += ", which baton checks by running " + verifyList(l.Verify)
	}
	return s
}

// verifyList names the verify commands in a line, up to three.
func verifyList(cmds []string) string {
	var q []string
	for i, c := range cmds {
		if i == 3 {
			q = append(q, fmt.Sprintf("%d more", len(cmds)-3))
			break
		}
		if len(c) > 80 || strings.ContainsAny(c, "`\n") {
			q = append(q, "a command of the loop's")
			continue
		}
		q = append(q, "`"+c+"`")
	}
	return strings.Join(q, ", ")
}

func progress(l *baton.Loop) string {
	if l.MaxIterations == 0 {
		return strconv.Itoa(l.Iteration) + " (no limit)"
	}
	return strconv.Itoa(l.Iteration) + "/" + strconv.Itoa(l.MaxIterations)
}
