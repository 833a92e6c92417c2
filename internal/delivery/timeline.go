package delivery

import (
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// StepView is one attempt at a phase, as a timeline shows it: the phase
// log's entries of that attempt folded into one row, with the time an
// agent or command worked apart from the time the delivery waited, for
// a worker or for a person. A deploy that "took a minute" was mostly a
// person's wait; the step says so.
type StepView struct {
	Phase string `json:"phase"`
	// Attempt numbers the steps of one phase: 2 is its second try.
	Attempt int64 `json:"attempt"`
	// Status is how the step ended, or stands while Current: pending,
	// running, succeeded, failed, blocked, skipped, or a person's
	// canceled or closed (Outcome).
	Status    string     `json:"status"`
	Verdict   string     `json:"verdict,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// WorkSeconds ran an agent or a command; QueueSeconds waited for a
	// worker; PersonSeconds waited for a person (to start the phase, or
	// to decide on its result).
	WorkSeconds   float64 `json:"work_seconds"`
	QueueSeconds  float64 `json:"queue_seconds"`
	PersonSeconds float64 `json:"person_seconds"`
	Current       bool    `json:"current"`
	// Note is what the step's outcome said (a failure, a verdict's
	// summary, why it was skipped).
	Note string `json:"note,omitempty"`
	// Decision is what a person did that ended it, in words ("approved
	// by alice"), "" when the pipeline moved on by itself.
	Decision string `json:"decision,omitempty"`
	// Setup is set on a set-up's step (Phase "setup"): what ran, its
	// exit and output.
	Setup *SetupView `json:"setup,omitempty"`
}

// SetupStep is the Phase of a set-up's step in a timeline.
const SetupStep = "setup"

// SetupView is a set-up as its timeline step shows it.
type SetupView struct {
	// N numbers the delivery's set-ups.
	N int `json:"n"`
	// For is the phase it made ready, ForAttempt the step of that phase
	// (as StepView.Attempt counts).
	For        string   `json:"for"`
	ForAttempt int64    `json:"for_attempt"`
	Commands   []string `json:"commands"`
	// Ran counts the commands that ran: on a failure the last of them
	// failed, with ExitCode (-1: it ran out of the phase's time).
	Ran      int `json:"ran"`
	ExitCode int `json:"exit_code"`
	// Output is the end of the commands' output (at most
	// baton.MaxSetupOutput bytes); Log names the file that holds all of
	// it, in the delivery's run directory on the worker's machine.
	Output string `json:"output,omitempty"`
	Log    string `json:"log,omitempty"`
}

// WithSetups puts each set-up into steps (a Timeline) as a step of its
// own, just before the step of the phase it made ready: the step of
// that phase under way when the set-up began.
func WithSetups(steps []StepView, setups []baton.SetupRun) []StepView {
	if len(setups) == 0 {
		return steps
	}
	// before[i] are the set-ups that go before steps[i]; a set-up of no
	// step (none of its phase had begun) goes at the end.
	before := make([][]StepView, len(steps)+1)
	for _, su := range setups {
		at := len(steps)
		for i := len(steps) - 1; i >= 0; i-- {
			if steps[i].Phase == string(su.Phase) && !su.StartedAt.Before(steps[i].StartedAt) {
				at = i
				break
			}
		}
		var attempt int64
		if at < len(steps) {
			attempt = steps[at].Attempt
		}
		before[at] = append(before[at], setupStep(su, attempt))
	}
	out := make([]StepView, 0, len(steps)+len(setups))
	for i, st := range steps {
		out = append(out, before[i]...)
		out = append(out, st)
	}
	return append(out, before[len(steps)]...)
}

func setupStep(r baton.SetupRun, forAttempt int64) StepView {
	end := r.EndedAt
	return StepView{Phase: SetupStep, Attempt: int64(r.N), Status: string(r.Status), StartedAt: r.StartedAt, EndedAt: &end,
		WorkSeconds: r.Duration().Seconds(), Note: r.Note,
		Setup: &SetupView{N: r.N, For: string(r.Phase), ForAttempt: forAttempt, Commands: nonNilStrings(r.Commands),
			Ran: r.Ran, ExitCode: r.ExitCode, Output: r.Output, Log: r.Log}}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Timeline folds a phase log (oldest first) into steps, one per attempt
// at a phase, at now.
func Timeline(log []baton.PhaseLogEntry, now time.Time) []StepView {
	steps := []StepView{}
	tries := map[baton.Phase]int64{}
	var cur *StepView
	ran, ended := false, false
	for i, e := range log {
		if e.Phase == baton.PhaseIntake {
			continue
		}
		var next *baton.PhaseLogEntry
		if i+1 < len(log) {
			next = &log[i+1]
		}
		newStep := cur == nil || string(e.Phase) != cur.Phase ||
			(e.Status == baton.StatusPending && ended) || (e.Status == baton.StatusRunning && ran)
		if newStep {
			if cur != nil && e.Decision != "" {
				cur.Decision = decisionWords(e)
			}
			if cur != nil && cur.EndedAt == nil {
				t := e.StartedAt
				cur.EndedAt = &t
			}
			tries[e.Phase]++
			steps = append(steps, StepView{Phase: string(e.Phase), Attempt: tries[e.Phase], Status: string(e.Status), StartedAt: e.StartedAt})
			cur = &steps[len(steps)-1]
			ran, ended = false, false
		}
		dur := e.Duration(now).Seconds()
		switch e.Status {
		case baton.StatusRunning:
			cur.WorkSeconds += dur
			ran = true
		case baton.StatusPending:
			// Whom it waited for is the machine's field: a checkpoint
			// entered by the system waits for a person (to start it, or
			// to reject it instead); anything else for a worker.
			if e.Waits {
				cur.PersonSeconds += dur
			} else {
				cur.QueueSeconds += dur
			}
		default:
			if e.Status == baton.StatusSucceeded && e.Verdict != "" && next != nil && next.Phase == e.Phase && next.Status == baton.StatusBlocked {
				cur.Verdict = string(e.Verdict) // the verdict stays with the block that follows
			}
			cur.PersonSeconds += dur
			ended = true
			if e.Phase != baton.PhaseClose || e.Note != "" {
				cur.Note = e.Note
			}
		}
		if e.Verdict != "" {
			cur.Verdict = string(e.Verdict)
		}
		cur.Status = string(Outcome(e))
		if e.Phase == baton.PhaseClose {
			t := e.StartedAt
			cur.EndedAt = &t
			cur.Note = "delivered"
			if e.Decision == DecisionClosed {
				cur.Note = decisionWords(e)
			}
		}
	}
	if cur != nil && cur.EndedAt == nil {
		cur.Current = true
	}
	return steps
}

// decisionWords says what a person decided in a phase log entry, with
// the reason they gave. The note of a reject or a retry is their reason
// with what the pipeline added to it (a review it could not post, the
// agent it switched to), so that is shown whole.
func decisionWords(e baton.PhaseLogEntry) string {
	s := e.Decision + " by " + e.Actor
	words := e.Reason
	if e.Decision == DecisionRejected || e.Decision == DecisionRetried {
		words = e.Note
	}
	if w := strings.TrimSpace(words); w != "" {
		s += ": " + w
	}
	return s
}
