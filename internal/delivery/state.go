package delivery

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// State names the state of a delivery a person decided on: its phase,
// where the phase's run stands, the attempt, and (where the work was
// shown) the work branch's commit. A decision that names a State is
// made on that state or not at all: once the delivery moved, it is
// refused (Conflict) with what changed, never applied to a state
// nobody looked at.
type State struct {
	Phase baton.Phase
	// Stand is the run status, or "queued" for a pending phase queued
	// for a worker (one a person's start already took).
	Stand   string
	Attempt int64
	// Commit is the work branch's head the person was shown, as hex
	// (at least 7 digits); "" when no work was shown.
	Commit string
}

// stateQueued is State.Stand of a pending phase queued for a worker.
const stateQueued = "queued"

// StateOf is the state d is in; commit is the work commit shown with
// it ("" for none).
func StateOf(d *baton.Delivery, commit string) State {
	stand := string(d.RunStatus)
	if d.RunStatus == baton.StatusPending && d.Queued {
		stand = stateQueued
	}
	return State{Phase: d.Phase, Stand: stand, Attempt: d.Attempt, Commit: commit}
}

// IsZero reports whether s names no state: a decision on whatever the
// delivery's state is when it arrives.
func (s State) IsZero() bool { return s == State{} }

// String is the state as edges carry it: "plan/succeeded/1", or
// "deploy/pending/4@1a2b3c4d5e6f" with the work commit shown.
func (s State) String() string {
	if s.IsZero() {
		return ""
	}
	out := string(s.Phase) + "/" + s.Stand + "/" + strconv.FormatInt(s.Attempt, 10)
	if s.Commit != "" {
		out += "@" + s.Commit
	}
	return out
}

// Words says the state for a person: "plan/succeeded (attempt 1)".
func (s State) Words() string {
	out := string(s.Phase) + "/" + s.Stand
	if s.Attempt > 0 {
		out += fmt.Sprintf(" (attempt %d)", s.Attempt)
	}
	return out
}

// ParseState reads a State as String writes it. An HTTP entity tag's
// quotes ("…", W/"…") are taken off first, so an If-Match header can
// carry it as it is; "" is the zero State.
func ParseState(text string) (State, error) {
	text = strings.TrimSpace(text)
	text = strings.TrimPrefix(text, "W/")
	if len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"' {
		text = text[1 : len(text)-1]
	}
	if text == "" {
		return State{}, nil
	}
	bad := func(why string) (State, error) {
		return State{}, baton.Errorf(baton.Invalid, "state %q: %s; want phase/status/attempt[@commit] as the delivery shows it (e.g. plan/succeeded/1)",
			baton.Truncate(text, 80, "…"), why)
	}
	rest, commit, hasCommit := strings.Cut(text, "@")
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return bad("not three parts")
	}
	s := State{Phase: baton.Phase(parts[0]), Stand: parts[1], Commit: commit}
	if !knownPhase(s.Phase) {
		return bad("no phase " + strconv.Quote(parts[0]))
	}
	if !knownStand(s.Stand) {
		return bad("no status " + strconv.Quote(parts[1]))
	}
	n, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != parts[2] {
		return bad("the attempt is not a number")
	}
	s.Attempt = n
	if hasCommit && !isCommit(commit) {
		return bad("the commit is not 7 to 64 lowercase hex digits")
	}
	return s, nil
}

func knownPhase(p baton.Phase) bool {
	for _, q := range baton.Phases {
		if p == q {
			return true
		}
	}
	return false
}

func knownStand(s string) bool {
	switch baton.RunStatus(s) {
	case baton.StatusPending, baton.StatusRunning, baton.StatusSucceeded, baton.StatusFailed, baton.StatusBlocked, baton.StatusSkipped:
		return true
	}
	return s == stateQueued
}

func isCommit(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// same reports whether d is still in the state s names (its phase, run
// and attempt; the commit is checked against the work branch apart).
func (s State) same(d *baton.Delivery) bool {
	cur := StateOf(d, "")
	return cur.Phase == s.Phase && cur.Stand == s.Stand && cur.Attempt == s.Attempt
}

// movedError is the refusal of a decision made on state on, which d
// has left: it says both, so a person sees what changed.
func movedError(d *baton.Delivery, on State) error {
	return baton.Errorf(baton.Conflict, "delivery %s moved since this decision was made: it was %s, it is now %s; look at it again and decide on what it is now",
		d.ID, on.Words(), StateOf(d, "").Words())
}
