package baton

import (
	"strings"
	"time"
)

// LoopStatus is where a loop is in its life. Ending a loop never deletes
// it: done and cancelled loops stay on disk with their outcome.
type LoopStatus string

const (
	LoopActive    LoopStatus = "active"
	LoopPaused    LoopStatus = "paused"
	LoopDone      LoopStatus = "done"
	LoopCancelled LoopStatus = "cancelled"
)

// Valid reports whether s is one of the four loop statuses.
func (s LoopStatus) Valid() bool {
	switch s {
	case LoopActive, LoopPaused, LoopDone, LoopCancelled:
		return true
	}
	return false
}

// Ended reports whether the loop can no longer run.
func (s LoopStatus) Ended() bool { return s == LoopDone || s == LoopCancelled }

// DefaultLoopMaxIterations bounds a loop unless the user asks otherwise;
// unbounded loops have burned whole quotas.
const DefaultLoopMaxIterations = 20

// Loop outcomes recorded by baton itself (promise outcomes are the
// promise texts).
const (
	OutcomeMaxIterations = "max_iterations"
	OutcomeCancelled     = "cancelled"
)

// Loop headings.
const (
	SectionLoopPrompt = "Loop Prompt"
	SectionLoopNotes  = "Notes"
)

// Loop is a prompt repeated at each Stop until the agent states one of its
// completion promises, or a limit ends it. It is bound to one session.
type Loop struct {
	ID                 string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	Status             LoopStatus
	Iteration          int
	MaxIterations      int      // 0 means unbounded
	CompletionPromises []string // any one of them ends the loop
	SourcePacketID     string
	SessionID          string // the session the loop is bound to; "" until its first stop
	Outcome            string // which promise, or max_iterations, or cancelled
	// ConsecutiveBlocks counts the Stop-hook blocks since the user last
	// started a turn (stop_hook_active false). Harnesses cap that chain
	// (Claude Code ends the turn after 8), so the engine counts it itself.
	ConsecutiveBlocks int
	// CompactedPacket is the packet the pre-compact hook saved when
	// nothing has restated it to the agent yet (Droid sends no
	// source=compact session start after its compaction). The next block
	// names it once and clears it.
	CompactedPacket string

	// Extra holds unknown frontmatter entries in file order.
	Extra []Field
	// Prompt is the loop prompt, verbatim.
	Prompt string
	// Notes is the raw body of the Notes section.
	Notes string
	// Trailing holds sections after Notes that baton does not know.
	Trailing []Section
}

// Validate checks the invariants of a stored loop: a valid id, a known
// status, a prompt, non-negative counters, and an outcome once it is done.
func (l *Loop) Validate() error {
	if err := CheckID("loop", l.ID); err != nil {
		return err
	}
	if !l.Status.Valid() {
		return Errorf(Invalid, "loop %s: status %q is not one of active, paused, done, cancelled", l.ID, l.Status)
	}
	if strings.TrimSpace(l.Prompt) == "" {
		return Errorf(Invalid, "loop %s: the loop prompt is empty", l.ID)
	}
	if l.Iteration < 0 || l.MaxIterations < 0 || l.ConsecutiveBlocks < 0 {
		return Errorf(Invalid, "loop %s: iteration, max_iterations and consecutive_blocks must not be negative", l.ID)
	}
	if l.Status == LoopDone && l.Outcome == "" {
		return Errorf(Invalid, "loop %s: a done loop needs an outcome", l.ID)
	}
	if l.SourcePacketID != "" && !ValidID(l.SourcePacketID) {
		return Errorf(Invalid, "loop %s: invalid source_packet_id %q", l.ID, l.SourcePacketID)
	}
	if l.CompactedPacket != "" && !ValidID(l.CompactedPacket) {
		return Errorf(Invalid, "loop %s: invalid compacted_packet %q", l.ID, l.CompactedPacket)
	}
	return nil
}
