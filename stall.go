package baton

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// DefaultStallRounds is how many rounds in a row without progress pause a
// loop or block a delivery, unless it says otherwise.
const DefaultStallRounds = 3

// MaxStallRounds bounds the setting: a larger one is a typo, and the
// iteration and round limits are there for anything longer.
const MaxStallRounds = 100

// CheckStallRounds checks a stall setting: 0 (the default, 3) to
// MaxStallRounds.
func CheckStallRounds(n int) error {
	if n < 0 || n > MaxStallRounds {
		return Errorf(Invalid, "stall rounds must be between 0 (the default, %d) and %d, got %d", DefaultStallRounds, MaxStallRounds, n)
	}
	return nil
}

// EffectiveStallRounds is n, or DefaultStallRounds for 0.
func EffectiveStallRounds(n int) int {
	if n <= 0 {
		return DefaultStallRounds
	}
	return n
}

// Round is what one round of work did (a loop's stop, a delivery's return
// to implement), reduced to the facts that tell progress. Each fact is a
// digest (Digest), so a round's record stays small whatever it saw; ""
// is "none" or "not known".
type Round struct {
	// Tree is the state of the files at the end of the round (a
	// delivery's work commit tree); "" where it is not known (a loop).
	Tree string
	// Tools are the tool calls the round made, each its name and input.
	Tools []string
	// Check is the failing check the round ended with, "" when none
	// failed; Feedback the review feedback it was sent back with.
	Check    string
	Feedback string
}

// maxStallTools and maxStallTrees bound what a Stall remembers.
const (
	maxStallTools = 256
	maxStallTrees = 8
)

// Stall is what the stall rule remembers between rounds: how many rounds
// in a row made no progress, and the facts progress is measured against.
type Stall struct {
	// Rounds counts the rounds in a row without progress.
	Rounds int `json:"rounds"`
	// Trees are the file states of the last rounds (up to 8): going back
	// to one of them is no change.
	Trees []string `json:"trees,omitempty"`
	// Tools are the last round's tool calls.
	Tools    []string `json:"tools,omitempty"`
	Check    string   `json:"check,omitempty"`
	Feedback string   `json:"feedback,omitempty"`
}

// Next applies one round to s, under a limit of n rounds (0: the
// default), and returns the state after it and, when the work stalled, a
// one-line reason. A round makes progress when any of these holds:
//
//   - its files differ from every one of the last rounds' (Tree);
//   - it made a tool call the round before did not make;
//   - its failing check differs from the round before's (one appeared,
//     went away or changed);
//   - its review feedback differs from the round before's.
//
// A round with none of these counts; n of them in a row stall the work.
// The count starts again after a stall, so work resumed by a person gets
// n rounds more before it stalls again.
func (s Stall) Next(r Round, n int) (Stall, string) {
	n = EffectiveStallRounds(n)
	changed := r.Tree != "" && !slices.Contains(s.Trees, r.Tree)
	newTool := false
	for _, t := range r.Tools {
		if !slices.Contains(s.Tools, t) {
			newTool = true
			break
		}
	}
	checkMoved := r.Check != s.Check
	feedbackMoved := r.Feedback != s.Feedback

	next := Stall{Rounds: s.Rounds + 1, Trees: s.Trees, Check: r.Check, Feedback: r.Feedback}
	if changed || newTool || checkMoved || feedbackMoved {
		next.Rounds = 0
	}
	if r.Tree != "" && changed {
		next.Trees = append(slices.Clone(s.Trees), r.Tree)
		if len(next.Trees) > maxStallTrees {
			next.Trees = next.Trees[len(next.Trees)-maxStallTrees:]
		}
	}
	next.Tools = dedupe(r.Tools, maxStallTools)
	if next.Rounds < n {
		return next, ""
	}
	why := []string{}
	if r.Tree != "" {
		why = append(why, "no file changed")
	}
	switch {
	case len(r.Tools) > 0:
		why = append(why, "no new tool call")
	case r.Tree == "":
		// Where the files are not known, tool calls are all there is to go by.
		why = append(why, "no tool call")
	}
	if r.Check != "" {
		why = append(why, "the same failing check")
	}
	if r.Feedback != "" {
		why = append(why, "the same review feedback")
	}
	reason := fmt.Sprintf("no progress in %d rounds in a row (%s)", next.Rounds, strings.Join(why, ", "))
	next.Rounds = 0
	return next, reason
}

// dedupe returns the distinct values of in, in order, at most max.
func dedupe(in []string, max int) []string {
	var out []string
	for _, v := range in {
		if len(out) == max {
			break
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Digest is a short stable digest of parts, for Round's facts: 16 hex
// digits of their SHA-256, each part's length before it so no two lists
// collide by joining.
func Digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Validate checks a stored stall state: counts not negative, facts
// bounded.
func (s Stall) Validate() error {
	if s.Rounds < 0 || s.Rounds > MaxStallRounds || len(s.Tools) > maxStallTools || len(s.Trees) > maxStallTrees {
		return Errorf(Invalid, "stall state out of bounds")
	}
	for _, v := range append(append([]string{s.Check, s.Feedback}, s.Tools...), s.Trees...) {
		if len(v) > 64 {
			return Errorf(Invalid, "stall state out of bounds")
		}
	}
	return nil
}
