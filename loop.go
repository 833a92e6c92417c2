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

// Verification of a promise: the loop's verify commands run, in the
// project root, when the agent states one of its promises.
const (
	// DefaultVerifyTimeout bounds one verification (all its commands
	// together) unless the loop says otherwise.
	DefaultVerifyTimeout = 5 * time.Minute
	// MaxVerifyTimeout is the longest a verification may take: it runs
	// inside the Stop hook, and baton install gives that hook this long
	// and a minute more in every harness.
	MaxVerifyTimeout = 10 * time.Minute
	// MaxVerifyCommands and MaxVerifyCommand bound a loop's commands.
	MaxVerifyCommands = 16
	MaxVerifyCommand  = 2000
	// MaxVerifyRuns is how many verification results a loop keeps.
	MaxVerifyRuns = 10
)

// VerifyRun is one verification of a stated promise: the commands that
// ran, in order, up to the first that failed.
type VerifyRun struct {
	At        time.Time `json:"at"`
	Iteration int       `json:"iteration"`
	Promise   string    `json:"promise"`
	Passed    bool      `json:"passed"`
	// Error says why the verification could not run at all (the sandbox
	// was required but is unavailable, sh is missing): the loop pauses.
	Error  string        `json:"error,omitempty"`
	Checks []VerifyCheck `json:"checks"`
}

// VerifyCheck is one command of a VerifyRun.
type VerifyCheck struct {
	Command    string `json:"command"`
	ExitCode   int    `json:"exit_code"` // -1 when killed
	TimedOut   bool   `json:"timed_out,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Confined   bool   `json:"confined"`
}

// Passed reports whether the command exited 0 in time.
func (c VerifyCheck) Passed() bool { return c.ExitCode == 0 && !c.TimedOut }

// Tokens counts what a model processed, the same way for every harness:
// Input is input that was neither read from nor written to a prompt
// cache, whichever way the harness reports it.
type Tokens struct {
	Input      int64 `json:"input"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
	Output     int64 `json:"output"`
}

// Total is every token processed, cached input included: what a loop's
// token budget counts.
func (t Tokens) Total() int64 { return t.Input + t.CacheRead + t.CacheWrite + t.Output }

// Add returns t plus u.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{Input: t.Input + u.Input, CacheRead: t.CacheRead + u.CacheRead, CacheWrite: t.CacheWrite + u.CacheWrite, Output: t.Output + u.Output}
}

// Spend is what a loop's session spent while the loop ran.
type Spend struct {
	Tokens
	// CostUSD is the cost of the priced part: what the harness recorded
	// itself (pi), else the tokens at the model's price.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced lists models baton has no price for: their tokens count,
	// their cost does not.
	Unpriced []string `json:"unpriced,omitempty"`
}

// UsageCursor is where a loop's next read of its session's usage starts:
// transcripts only grow, so each stop reads what is new.
type UsageCursor struct {
	Path   string `json:"path,omitempty"`
	Offset int64  `json:"offset"`
	// SkipLine: Offset is inside a line too long to be a usage line; the
	// next read drops it up to its end.
	SkipLine bool `json:"skip_line,omitempty"`
	// Since: lines stamped earlier are not the loop's (the session's work
	// before the loop started, or before it was handed to this session).
	Since time.Time `json:"since"`
	// LastID is the last Claude message counted, and Totals what was
	// counted of it: Claude writes each content block of a message as its
	// own line, each with the message's usage.
	LastID string `json:"last_id,omitempty"`
	// Model is the model of the current turn (Codex names it once a turn).
	Model string `json:"model,omitempty"`
	// Totals is the cumulative usage last seen, where the harness reports
	// running totals (Codex, Droid): the next read counts the difference.
	// For Claude it is what was counted of message LastID.
	Totals *Tokens `json:"totals,omitempty"`
	// Droid: Totals are a Droid session's running totals, read from its
	// settings file, not from transcript lines that carry a time.
	Droid bool `json:"droid,omitempty"`
}

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
	// Verify are commands that must all pass (exit 0) before a stated
	// promise ends the loop; "the promise is an honor system" otherwise.
	Verify []string
	// VerifyTimeout bounds one verification, all commands together; 0 is
	// DefaultVerifyTimeout.
	VerifyTimeout time.Duration
	// VerifyRuns are the last MaxVerifyRuns verifications, oldest first.
	VerifyRuns []VerifyRun
	// PauseReason says, in one line, why baton paused the loop (a budget
	// reached, a verification that could not run); "" when a person did.
	PauseReason string

	// MaxTokens, MaxCostUSD and MaxDuration bound what the loop may
	// spend; 0 is no bound. At a bound the loop pauses.
	MaxTokens   int64
	MaxCostUSD  float64
	MaxDuration time.Duration
	// Spent is what the loop's session spent since the loop started, as
	// its transcript reports it.
	Spent Spend
	// ActiveSince is when the loop last became active (zero while it is
	// not); ActiveFor is its active time before that. MaxDuration counts
	// active time: a paused loop's clock stands still.
	ActiveSince time.Time
	ActiveFor   time.Duration
	// Usage is where the next read of the session's usage starts.
	Usage UsageCursor
	// StallRounds is how many rounds in a row without progress pause the
	// loop (0: DefaultStallRounds); Stall is what the rule remembers.
	StallRounds int
	Stall       Stall

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
	if l.MaxTokens < 0 || l.MaxCostUSD < 0 || l.MaxDuration < 0 || l.ActiveFor < 0 {
		return Errorf(Invalid, "loop %s: max_tokens, max_cost_usd, max_duration and active_for must not be negative", l.ID)
	}
	if err := CheckVerify(l.Verify, l.VerifyTimeout); err != nil {
		return Errorf(Invalid, "loop %s: %s", l.ID, ErrorMessage(err))
	}
	if err := CheckStallRounds(l.StallRounds); err != nil {
		return Errorf(Invalid, "loop %s: %s", l.ID, ErrorMessage(err))
	}
	if err := l.Stall.Validate(); err != nil {
		return Errorf(Invalid, "loop %s: %s", l.ID, ErrorMessage(err))
	}
	return nil
}

// CheckVerify checks a loop's verify commands and timeout.
func CheckVerify(commands []string, timeout time.Duration) error {
	if len(commands) > MaxVerifyCommands {
		return Errorf(Invalid, "at most %d verify commands, got %d", MaxVerifyCommands, len(commands))
	}
	for _, c := range commands {
		if strings.TrimSpace(c) == "" {
			return Errorf(Invalid, "a verify command must not be empty")
		}
		if len(c) > MaxVerifyCommand {
			return Errorf(Invalid, "a verify command is over %d bytes", MaxVerifyCommand)
		}
	}
	if timeout < 0 || timeout > MaxVerifyTimeout {
		return Errorf(Invalid, "the verify timeout must be between 0 (the default, %s) and %s, got %s", DefaultVerifyTimeout, MaxVerifyTimeout, timeout)
	}
	return nil
}

// ActiveTime is how long the loop has been active, up to now.
func (l *Loop) ActiveTime(now time.Time) time.Duration {
	d := l.ActiveFor
	if !l.ActiveSince.IsZero() && now.After(l.ActiveSince) {
		d += now.Sub(l.ActiveSince)
	}
	return d
}

// StopClock adds the time since ActiveSince to ActiveFor: the loop stops
// being active (paused, done, cancelled).
func (l *Loop) StopClock(now time.Time) {
	l.ActiveFor = l.ActiveTime(now)
	l.ActiveSince = time.Time{}
}

// EffectiveVerifyTimeout is the loop's verify timeout, the default for 0.
func (l *Loop) EffectiveVerifyTimeout() time.Duration {
	if l.VerifyTimeout <= 0 {
		return DefaultVerifyTimeout
	}
	return l.VerifyTimeout
}
