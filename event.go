package baton

import "time"

// EventKind says what a delivery event records.
type EventKind string

const (
	// EventPhase is a change of the delivery's state, as its phase log
	// entry records it.
	EventPhase EventKind = "phase"
	// EventText is assistant text from a running agent.
	EventText EventKind = "text"
	// EventTool is one tool call of a running agent ("→ Bash: go test").
	EventTool EventKind = "tool"
	// EventNote is a notice about a running agent: an error, a retry, a
	// truncated log.
	EventNote EventKind = "note"
)

// MaxEventText bounds one event's text; longer agent output is cut (the
// raw logs keep everything).
const MaxEventText = 16 << 10

// DeliveryEvent is one entry of a delivery's event log: what a person
// watching the delivery sees, in order. Seq numbers a delivery's events
// from 1 without gaps, in the order they were committed, so a reader that
// has seen up to Seq n resumes after n and misses nothing.
type DeliveryEvent struct {
	DeliveryID string    `json:"delivery_id"`
	Seq        int64     `json:"seq"`
	Kind       EventKind `json:"kind"`
	// Run is the agent run (its N) that produced the output; 0 for phase
	// events.
	Run int `json:"run,omitempty"`
	// Phase and Status are the state a phase event entered (for output
	// events, the phase the agent runs in).
	Phase  Phase     `json:"phase,omitempty"`
	Status RunStatus `json:"status,omitempty"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}
