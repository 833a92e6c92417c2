package baton

import (
	"strings"
	"time"
)

// MaxMessage bounds a person's message to a running agent, in bytes.
const MaxMessage = 8 << 10

// Message is a person's word to the agent running a delivery's phase
// (`baton delivery say`): given to the agent at its next safe point, and
// kept as a ref the next phases see.
type Message struct {
	ID         int64  `json:"id"`
	DeliveryID string `json:"delivery_id"`
	// Phase and Attempt are what the delivery was running, or about to
	// run, when the message was sent.
	Phase     Phase     `json:"phase"`
	Attempt   int64     `json:"attempt"`
	Actor     string    `json:"actor"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	// DeliveredAt is when the message reached the agent, or when its run
	// ended without it (zero while it waits); Outcome says which, in
	// words.
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	Outcome     string    `json:"outcome,omitempty"`
}

// CheckMessage checks a message's text: not blank, at most MaxMessage
// bytes.
func CheckMessage(text string) error {
	if strings.TrimSpace(text) == "" {
		return Errorf(Invalid, "the message is empty: say what the agent should know")
	}
	return CheckSize("message", text, MaxMessage)
}
