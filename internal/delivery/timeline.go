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
