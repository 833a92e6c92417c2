package baton

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestStallPausesAfterNRoundsWithoutProgress(t *testing.T) {
	t.Parallel()
	same := Round{Tools: []string{Digest("Bash", `{"command":"go test ./..."}`)}, Check: Digest("TestX fails")}
	var s Stall
	var why string
	s, why = s.Next(same, 3) // a new tool call: progress
	if why != "" || s.Rounds != 0 {
		t.Fatalf("first round: Rounds %d, reason %q; want 0 and none", s.Rounds, why)
	}
	for i := 1; i <= 2; i++ {
		if s, why = s.Next(same, 3); why != "" || s.Rounds != i {
			t.Fatalf("repeat %d: Rounds %d, reason %q; want %d and none", i, s.Rounds, why, i)
		}
	}
	s, why = s.Next(same, 3)
	want := "no progress in 3 rounds in a row (no new tool call, the same failing check)"
	if why != want {
		t.Fatalf("third repeat: reason %q, want %q", why, want)
	}
	if s.Rounds != 0 {
		t.Errorf("after a stall Rounds = %d, want 0 (a resumed loop gets n rounds more)", s.Rounds)
	}
}

func TestStallProgressResetsTheCount(t *testing.T) {
	t.Parallel()
	base := Round{Tree: "t1", Check: "c1", Feedback: "f1", Tools: []string{"a"}}
	tests := []struct {
		name string
		next Round
	}{
		{"files changed", Round{Tree: "t2", Check: "c1", Feedback: "f1", Tools: []string{"a"}}},
		{"a new tool call", Round{Tree: "t1", Check: "c1", Feedback: "f1", Tools: []string{"a", "b"}}},
		{"another failing check", Round{Tree: "t1", Check: "c2", Feedback: "f1", Tools: []string{"a"}}},
		{"the check passes", Round{Tree: "t1", Feedback: "f1", Tools: []string{"a"}}},
		{"other feedback", Round{Tree: "t1", Check: "c1", Feedback: "f2", Tools: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := Stall{}.Next(base, 2)
			s, _ = s.Next(base, 2)
			if s.Rounds != 1 {
				t.Fatalf("a repeated round: Rounds %d, want 1", s.Rounds)
			}
			if s, why := s.Next(tt.next, 2); s.Rounds != 0 || why != "" {
				t.Errorf("Next(%+v) = Rounds %d, reason %q; want 0 and none", tt.next, s.Rounds, why)
			}
		})
	}
}

func TestStallGoingBackToAnEarlierTreeIsNoChange(t *testing.T) {
	t.Parallel()
	var s Stall
	var why string
	for i, tree := range []string{"a", "b", "a", "b", "a"} {
		s, why = s.Next(Round{Tree: tree, Feedback: "same"}, 3)
		if i == 4 {
			if !strings.Contains(why, "no file changed") {
				t.Fatalf("round %d: reason %q, want a stall with no file changed", i, why)
			}
			return
		}
		if why != "" {
			t.Fatalf("round %d: stalled early: %q", i, why)
		}
	}
}

func TestCheckStallRounds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 3, MaxStallRounds} {
		if err := CheckStallRounds(n); err != nil {
			t.Errorf("CheckStallRounds(%d) = %v, want nil", n, err)
		}
	}
	for _, n := range []int{-1, MaxStallRounds + 1} {
		if ErrorCode(CheckStallRounds(n)) != Invalid {
			t.Errorf("CheckStallRounds(%d) is not Invalid", n)
		}
	}
}

// FuzzStall checks Next against a model kept apart from it: the whole
// history of rounds, judged afresh each time.
func FuzzStall(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, uint8(3))
	f.Add([]byte{1, 2, 1, 2, 1, 2, 3, 3, 3}, uint8(2))
	f.Add([]byte{0x11, 0x22, 0x11, 0x11, 0x11}, uint8(0))
	f.Fuzz(func(t *testing.T, script []byte, limit uint8) {
		n := int(limit % 6)
		// Each byte is a round: bits pick its tree, tools, check and feedback
		// from small alphabets so repeats are common.
		var hist []Round
		var s Stall
		since := 0 // rounds without progress, by the model
		for i, b := range script {
			r := Round{Check: [...]string{"", "c1"}[b>>4&1], Feedback: [...]string{"", "f1"}[b>>5&1]}
			if tr := b & 3; tr != 0 {
				r.Tree = fmt.Sprint("t", tr)
			}
			for k := range int(b >> 2 & 3) {
				r.Tools = append(r.Tools, fmt.Sprint("x", (int(b>>6)+k)%3))
			}
			progress := true
			if len(hist) > 0 {
				prev := hist[len(hist)-1]
				var trees []string
				for _, h := range hist[max(0, len(hist)-64):] {
					if h.Tree != "" && !slices.Contains(trees, h.Tree) {
						trees = append(trees, h.Tree)
					}
				}
				trees = trees[max(0, len(trees)-maxStallTrees):]
				newTool := false
				for _, x := range r.Tools {
					newTool = newTool || !slices.Contains(prev.Tools, x)
				}
				progress = (r.Tree != "" && !slices.Contains(trees, r.Tree)) || newTool || r.Check != prev.Check || r.Feedback != prev.Feedback
			} else {
				progress = r.Tree != "" || len(r.Tools) > 0 || r.Check != "" || r.Feedback != ""
			}
			if progress {
				since = 0
			} else {
				since++
			}
			hist = append(hist, r)
			var why string
			s, why = s.Next(r, n)
			if err := s.Validate(); err != nil {
				t.Fatalf("round %d: state %+v: %v", i, s, err)
			}
			wantStall := since >= EffectiveStallRounds(n)
			if (why != "") != wantStall {
				t.Fatalf("round %d (%+v): reason %q, model says stalled=%v after %d rounds without progress", i, r, why, wantStall, since)
			}
			if wantStall {
				since = 0
			} else if s.Rounds != since {
				t.Fatalf("round %d: Rounds = %d, model %d", i, s.Rounds, since)
			}
		}
	})
}
