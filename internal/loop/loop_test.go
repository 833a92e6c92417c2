package loop

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestExtractPromises(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  string
		want []string
	}{
		{"tests pass\n<promise> DONE </promise>", []string{"DONE"}},
		{"DONE", nil}, // bare text never counts (ralph: claude-code#81827)
		{"<promise>DONE", nil},
		{"DONE</promise>", nil},
		{"<promise>ALL\n  TESTS\tPASS</promise>", []string{"ALL TESTS PASS"}},
		{"first <promise>BLOCKED</promise> then <promise>DONE</promise>", []string{"BLOCKED", "DONE"}},
		{"<PROMISE>done</Promise>", []string{"done"}},
		{"<promise>a <promise>DONE</promise>", []string{"DONE"}},
		{"<promise></promise>", []string{""}},
		{"<promise>*?[x]</promise>", []string{"*?[x]"}},
		{"İİ<promise>DONE</promise>", []string{"DONE"}}, // no index drift on multi-byte case folds
		// As a model copies it from Codex, which escapes a hook's text.
		{"&lt;promise&gt;DONE&lt;/promise&gt;", []string{"DONE"}},
		{"&LT;Promise&GT;a&lt;/promise&gt; and <promise>b&lt;/promise&gt;", []string{"a", "b"}},
		{"&lt;promise&gt;DONE", nil},
		{"&lt;promise>DONE&lt;/promise>", nil}, // half-escaped is not a tag
	}
	for _, tt := range tests {
		if got := ExtractPromises(tt.msg); !cmp.Equal(got, tt.want) {
			t.Errorf("ExtractPromises(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

func TestMatchPromise(t *testing.T) {
	t.Parallel()
	promises := []string{"ALL TESTS PASS", "BLOCKED", "*?["}
	tests := []struct {
		msg    string
		want   string
		wantOK bool
	}{
		{"<promise>ALL TESTS PASS</promise>", "ALL TESTS PASS", true},
		{"<promise>\n  all tests pass\n</promise>", "", false}, // literal: case matters
		{"<promise>\n ALL   TESTS\nPASS </promise>", "ALL TESTS PASS", true},
		{"working… <promise>NOT YET</promise> <promise>BLOCKED</promise>", "BLOCKED", true}, // every tag in the message counts
		{"ALL TESTS PASS", "", false},
		{"<promise>*?[</promise>", "*?[", true},
		{"<promise>ALL</promise>", "", false},
	}
	for _, tt := range tests {
		got, ok := MatchPromise(promises, tt.msg)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("MatchPromise(%q) = %q, %v; want %q, %v", tt.msg, got, ok, tt.want, tt.wantOK)
		}
	}
	if _, ok := MatchPromise(nil, "<promise>DONE</promise>"); ok {
		t.Error("MatchPromise(no promises) matched")
	}
	if _, ok := MatchPromise([]string{"  "}, "<promise></promise>"); ok {
		t.Error("an empty promise matched an empty tag")
	}
}

func active(mut func(*baton.Loop)) *baton.Loop {
	l := &baton.Loop{ID: "L", Status: baton.LoopActive, Iteration: 1, MaxIterations: 20,
		CompletionPromises: []string{"DONE", "BLOCKED"}, SessionID: "s1", Prompt: "Fix it.\n---\nagain"}
	if mut != nil {
		mut(l)
	}
	return l
}

func TestDecide(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	passed := baton.VerifyRun{At: t0, Iteration: 1, Promise: "DONE", Passed: true, Checks: []baton.VerifyCheck{{Command: "go test ./...", DurationMS: 1200, Confined: true}}}
	failed := baton.VerifyRun{At: t0, Iteration: 1, Promise: "DONE", Checks: []baton.VerifyCheck{{Command: "go test ./...", ExitCode: 1, DurationMS: 1200, Confined: true}}}
	broken := baton.VerifyRun{At: t0, Iteration: 1, Promise: "DONE", Error: "not started: --sandbox=required"}
	tests := []struct {
		name  string
		loop  *baton.Loop
		stop  Stop
		want  Decision
		after *baton.Loop // nil: unchanged
	}{
		{name: "no loop", loop: nil, stop: Stop{SessionID: "s1"}, want: Decision{Action: Ignore}},
		{name: "paused", loop: active(func(l *baton.Loop) { l.Status = baton.LoopPaused }), stop: Stop{SessionID: "s1", Known: true, Message: "x"}, want: Decision{Action: Ignore}},
		{name: "another session never touches it", loop: active(nil), stop: Stop{SessionID: "s2", Known: true, Message: "<promise>DONE</promise>"}, want: Decision{Action: Ignore}},
		{name: "payload without a session id", loop: active(nil), stop: Stop{Known: true, Message: "x"}, want: Decision{Action: Ignore}},
		{
			name: "continue", loop: active(nil), stop: Stop{SessionID: "s1", Known: true, Message: "still working"},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 2, 1 }),
		},
		{
			name: "unknown message continues", loop: active(nil), stop: Stop{SessionID: "s1"},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 2, 1 }),
		},
		{
			name: "binds on first stop", loop: active(func(l *baton.Loop) { l.SessionID = "" }), stop: Stop{SessionID: "s9", Known: true, Message: "hi"},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.SessionID, l.Iteration, l.ConsecutiveBlocks = "s9", 2, 1 }),
		},
		{
			name: "promise", loop: active(func(l *baton.Loop) { l.Iteration = 5 }), stop: Stop{SessionID: "s1", Known: true, Message: "done.\n<promise>\nBLOCKED\n</promise>"},
			want:  Decision{Action: Allow, Message: "baton loop L: done (BLOCKED) at iteration 5/20", Changed: true, Finished: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.Status, l.Outcome = 5, baton.LoopDone, "BLOCKED" }),
		},
		{
			name: "bare promise is not a promise", loop: active(nil), stop: Stop{SessionID: "s1", Known: true, Message: "DONE"},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 2, 1 }),
		},
		{
			name: "promise beats the limit", loop: active(func(l *baton.Loop) { l.Iteration = 20 }), stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>"},
			want:  Decision{Action: Allow, Message: "baton loop L: done (DONE) at iteration 20/20", Changed: true, Finished: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.Status, l.Outcome = 20, baton.LoopDone, "DONE" }),
		},
		{
			name: "limit", loop: active(func(l *baton.Loop) { l.Iteration, l.MaxIterations = 3, 3 }), stop: Stop{SessionID: "s1", Known: true, Message: "nope"},
			want: Decision{Action: Allow, Message: "baton loop L: stopped after 3 iterations (the limit) without a promise; the loop is done, outcome max_iterations", Changed: true, Finished: true},
			after: active(func(l *baton.Loop) {
				l.Iteration, l.MaxIterations, l.Status, l.Outcome = 3, 3, baton.LoopDone, baton.OutcomeMaxIterations
			}),
		},
		{
			name: "unbounded", loop: active(func(l *baton.Loop) { l.Iteration, l.MaxIterations, l.CompletionPromises = 100, 0, nil }), stop: Stop{SessionID: "s1", Known: true, Message: "x"},
			want: Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 101 (no limit) — no completion promise: it ends at the iteration limit or with `baton loop cancel L`", Changed: true},
			after: active(func(l *baton.Loop) {
				l.Iteration, l.MaxIterations, l.CompletionPromises, l.ConsecutiveBlocks = 101, 0, nil, 1
			}),
		},
		{
			name: "chain below the cap blocks", loop: active(func(l *baton.Loop) { l.ConsecutiveBlocks = 7 }), stop: Stop{SessionID: "s1", StopHookActive: true, BlockCap: 8},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 2, 8 }),
		},
		{
			name: "cap reached allows and keeps the loop", loop: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 9, 8 }), stop: Stop{SessionID: "s1", StopHookActive: true, BlockCap: 8},
			want: Decision{Action: Allow, Message: "baton loop L: paused for this turn at iteration 9/20 after 8 consecutive stop-hook blocks (the harness's cap); the loop stays active: send any message to continue, or run `baton loop cancel L`"},
		},
		{
			name: "a new turn resets the chain", loop: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 9, 8 }), stop: Stop{SessionID: "s1", StopHookActive: false, BlockCap: 8},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 10/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 10, 1 }),
		},
		{
			name: "no cap known", loop: active(func(l *baton.Loop) { l.ConsecutiveBlocks = 50 }), stop: Stop{SessionID: "s1", StopHookActive: true},
			want:  Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) { l.Iteration, l.ConsecutiveBlocks = 2, 51 }),
		},
		{
			name: "a verified promise is believed", loop: active(func(l *baton.Loop) { l.Verify = []string{"go test ./..."} }),
			stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>", Verify: &passed},
			want: Decision{Action: Allow, Message: "baton loop L: done (DONE) at iteration 1/20, verified (1 command passed)", Changed: true, Finished: true},
			after: active(func(l *baton.Loop) {
				l.Verify, l.VerifyRuns, l.Status, l.Outcome = []string{"go test ./..."}, []baton.VerifyRun{passed}, baton.LoopDone, "DONE"
			}),
		},
		{
			name: "a failed verification is the next round's Failure", loop: active(func(l *baton.Loop) { l.Verify = []string{"go test ./..."} }),
			stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>", Verify: &failed, Failure: "`go test ./...` failed:\n```\nFAIL x\n```\n"},
			want: Decision{Action: Block, Reason: "Fix it.\n---\nagain\n\n## Failure\n\n`go test ./...` failed:\n```\nFAIL x\n```",
				Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED), which baton checks by running `go test ./...`", Changed: true},
			after: active(func(l *baton.Loop) {
				l.Verify, l.VerifyRuns, l.Iteration, l.ConsecutiveBlocks = []string{"go test ./..."}, []baton.VerifyRun{failed}, 2, 1
			}),
		},
		{
			name: "a promise the loop did not verify is not believed", loop: active(func(l *baton.Loop) { l.Verify = []string{"go test ./..."} }),
			stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>"},
			want: Decision{Action: Block, Reason: "Fix it.\n---\nagain\n\n## Failure\n\nYou stated the promise \"DONE\", but the loop's verify commands did not run, so the promise is not accepted yet. State it again when the work is done.",
				Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED), which baton checks by running `go test ./...`", Changed: true},
			after: active(func(l *baton.Loop) { l.Verify, l.Iteration, l.ConsecutiveBlocks = []string{"go test ./..."}, 2, 1 }),
		},
		{
			name: "a verification that could not run pauses", loop: active(func(l *baton.Loop) { l.Verify = []string{"go test ./..."} }),
			stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>", Verify: &broken},
			want: Decision{Action: Allow, Changed: true, Paused: true,
				Message: "baton loop L: paused at iteration 1/20: its verification could not run: not started: --sandbox=required; `baton loop resume L` continues it"},
			after: active(func(l *baton.Loop) {
				l.Verify, l.VerifyRuns, l.Status, l.PauseReason = []string{"go test ./..."}, []baton.VerifyRun{broken}, baton.LoopPaused, "its verification could not run: not started: --sandbox=required"
			}),
		},
		{
			name: "a failed verification at the limit ends the loop", loop: active(func(l *baton.Loop) { l.Verify, l.Iteration, l.MaxIterations = []string{"go test ./..."}, 3, 3 }),
			stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>", Verify: &failed},
			want: Decision{Action: Allow, Changed: true, Finished: true,
				Message: "baton loop L: stopped after 3 iterations (the limit); the last promise failed its verification; the loop is done, outcome max_iterations"},
			after: active(func(l *baton.Loop) {
				l.Verify, l.VerifyRuns, l.Iteration, l.MaxIterations, l.Status, l.Outcome = []string{"go test ./..."}, []baton.VerifyRun{failed}, 3, 3, baton.LoopDone, baton.OutcomeMaxIterations
			}),
		},
		{
			name: "spend is added and the token budget pauses", loop: active(func(l *baton.Loop) { l.MaxTokens, l.Spent.Input = 1000, 900 }),
			stop: Stop{SessionID: "s1", Known: true, Message: "working", Spent: baton.Spend{Tokens: baton.Tokens{Output: 150}, CostUSD: 0.5}, Usage: &baton.UsageCursor{Path: "t", Offset: 10}},
			want: Decision{Action: Allow, Changed: true, Paused: true,
				Message: "baton loop L: paused at iteration 1/20: its token budget is spent (1050 of 1000 tokens); raise it with `baton loop resume L --max-tokens N`; `baton loop resume L` continues it"},
			after: active(func(l *baton.Loop) {
				l.MaxTokens, l.Spent, l.Usage = 1000, baton.Spend{Tokens: baton.Tokens{Input: 900, Output: 150}, CostUSD: 0.5}, baton.UsageCursor{Path: "t", Offset: 10}
				l.Status, l.PauseReason = baton.LoopPaused, "its token budget is spent (1050 of 1000 tokens); raise it with `baton loop resume L --max-tokens N`"
			}),
		},
		{
			name: "spend read from a stale cursor is not added twice", loop: active(func(l *baton.Loop) { l.Usage = baton.UsageCursor{Path: "t", Offset: 10} }),
			stop: Stop{SessionID: "s1", Known: true, Message: "working", Spent: baton.Spend{Tokens: baton.Tokens{Output: 150}}, Usage: &baton.UsageCursor{Path: "t", Offset: 10}},
			want: Decision{Action: Block, Reason: "Fix it.\n---\nagain", Message: "baton loop L: iteration 2/20 — finish with <promise>DONE</promise> (or BLOCKED)", Changed: true},
			after: active(func(l *baton.Loop) {
				l.Usage, l.Iteration, l.ConsecutiveBlocks = baton.UsageCursor{Path: "t", Offset: 10}, 2, 1
			}),
		},
		{
			name: "the cost budget pauses", loop: active(func(l *baton.Loop) { l.MaxCostUSD, l.Spent.CostUSD = 2, 2.25 }),
			stop: Stop{SessionID: "s1", Known: true, Message: "working"},
			want: Decision{Action: Allow, Changed: true, Paused: true,
				Message: "baton loop L: paused at iteration 1/20: its cost budget is spent ($2.25 of $2.00); raise it with `baton loop resume L --max-cost USD`; `baton loop resume L` continues it"},
			after: active(func(l *baton.Loop) {
				l.MaxCostUSD, l.Spent.CostUSD = 2, 2.25
				l.Status, l.PauseReason = baton.LoopPaused, "its cost budget is spent ($2.25 of $2.00); raise it with `baton loop resume L --max-cost USD`"
			}),
		},
		{
			name: "the time budget counts active time and pauses", loop: active(func(l *baton.Loop) { l.MaxDuration, l.ActiveFor, l.ActiveSince = time.Hour, 50*time.Minute, t0 }),
			stop: Stop{SessionID: "s1", Known: true, Message: "working", Now: t0.Add(10 * time.Minute)},
			want: Decision{Action: Allow, Changed: true, Paused: true,
				Message: "baton loop L: paused at iteration 1/20: its time budget is spent (active 1h0m0s of 1h0m0s); raise it with `baton loop resume L --max-duration D`; `baton loop resume L` continues it"},
			after: active(func(l *baton.Loop) {
				l.MaxDuration, l.ActiveFor = time.Hour, time.Hour
				l.Status, l.PauseReason = baton.LoopPaused, "its time budget is spent (active 1h0m0s of 1h0m0s); raise it with `baton loop resume L --max-duration D`"
			}),
		},
		{
			name: "a verified promise beats a spent budget", loop: active(func(l *baton.Loop) { l.Verify, l.MaxTokens, l.Spent.Input = []string{"true"}, 10, 50 }),
			stop: Stop{SessionID: "s1", Known: true, Message: "<promise>DONE</promise>", Verify: &passed},
			want: Decision{Action: Allow, Message: "baton loop L: done (DONE) at iteration 1/20, verified (1 command passed)", Changed: true, Finished: true},
			after: active(func(l *baton.Loop) {
				l.Verify, l.MaxTokens, l.Spent.Input, l.VerifyRuns, l.Status, l.Outcome = []string{"true"}, 10, 50, []baton.VerifyRun{passed}, baton.LoopDone, "DONE"
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *baton.Loop
			if tt.loop != nil {
				c := *tt.loop
				before = &c
			}
			got := Decide(tt.loop, tt.stop)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide() mismatch (-want +got):\n%s", diff)
			}
			want := tt.after
			if want == nil {
				want = before
			}
			if diff := cmp.Diff(want, tt.loop); diff != "" {
				t.Errorf("loop after Decide() mismatch (-want +got):\n%s", diff)
			}
			if tt.loop != nil && tt.loop.Validate() != nil && tt.loop.ID != "" {
				t.Errorf("loop after Decide() is invalid: %v", tt.loop.Validate())
			}
		})
	}
}

func FuzzExtractPromises(f *testing.F) {
	f.Add("tests pass\n<promise> DONE </promise>")
	f.Add("DONE")
	f.Add("<promise>a<promise>b</promise></promise>")
	f.Add("<PROMISE>x</promise><promise>")
	f.Add("&lt;promise&gt;DONE&lt;/promise&gt;")
	f.Add("&LT;Promise&gt;a</promise> &lt;/promise&gt;")
	f.Fuzz(func(t *testing.T, msg string) {
		got := ExtractPromises(msg)
		lower := strings.ToLower(msg)
		closes := strings.Count(lower, "</promise>") + strings.Count(lower, "&lt;/promise&gt;")
		if len(got) > 0 && closes == 0 {
			t.Fatalf("ExtractPromises(%q) = %q without a closing tag", msg, got)
		}
		// Codex escapes the tags: escaped, msg states the same promises.
		if !strings.Contains(msg, "&") {
			esc := strings.NewReplacer("<promise>", "&lt;promise&gt;", "</promise>", "&lt;/promise&gt;").Replace(msg)
			if e := ExtractPromises(esc); !slices.Equal(e, got) {
				t.Fatalf("ExtractPromises(%q) = %q, but escaped (%q) = %q", msg, got, esc, e)
			}
		}
		if n := closes; len(got) > n {
			t.Fatalf("ExtractPromises(%q) found %d promises for %d closing tags", msg, len(got), n)
		}
		for _, p := range got {
			if p != Normalize(p) {
				t.Fatalf("promise %q is not normalized", p)
			}
			if utf8.ValidString(msg) && !utf8.ValidString(p) {
				t.Fatalf("promise %q from valid UTF-8 is invalid", p)
			}
			// A stated promise matches itself.
			if p != "" {
				if _, ok := MatchPromise([]string{p}, msg); !ok {
					t.Fatalf("MatchPromise(%q, %q) = false", p, msg)
				}
			}
		}
	})
}

// The decision keeps the loop valid and never moves it across sessions.
func FuzzDecide(f *testing.F) {
	f.Add("s1", "s1", "<promise>DONE</promise>", true, false, 3, 20, 0, 8, uint8(0), int64(0), int64(0))
	f.Add("", "s2", "", false, true, 8, 8, 8, 8, uint8(1), int64(100), int64(50))
	f.Add("s1", "s1", "<promise>DONE</promise>", true, false, 1, 20, 0, 0, uint8(2), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, bound, session, msg string, known, active bool, iter, max, blocks, cap int, verify uint8, maxTokens, spent int64) {
		if iter < 0 || max < 0 || blocks < 0 || maxTokens < 0 || spent < 0 {
			return
		}
		l := &baton.Loop{ID: "L", Status: baton.LoopActive, Iteration: iter, MaxIterations: max, ConsecutiveBlocks: blocks,
			CompletionPromises: []string{"DONE"}, SessionID: bound, Prompt: "p", MaxTokens: maxTokens}
		s := Stop{SessionID: session, Message: msg, Known: known, StopHookActive: active, BlockCap: cap,
			Spent: baton.Spend{Tokens: baton.Tokens{Output: spent}}, Usage: &baton.UsageCursor{Offset: 1}}
		// verify: 0 none; 1 commands, not run; 2 passed; 3 failed; 4 could not run.
		if verify%5 > 0 {
			l.Verify = []string{"true"}
		}
		switch verify % 5 {
		case 2:
			s.Verify = &baton.VerifyRun{Passed: true}
		case 3:
			s.Verify, s.Failure = &baton.VerifyRun{}, "it failed"
		case 4:
			s.Verify = &baton.VerifyRun{Error: "no sandbox"}
		}
		d := Decide(l, s)
		if bound != "" && bound != session && (d.Action != Ignore || l.SessionID != bound || l.Iteration != iter) {
			t.Fatalf("a stop from %q changed a loop bound to %q: %+v", session, bound, d)
		}
		if d.Action == Block && (!strings.HasPrefix(d.Reason, "p") || l.Iteration != iter+1) {
			t.Fatalf("block = %+v, iteration %d -> %d", d, iter, l.Iteration)
		}
		if d.Action == Block && verify%5 == 0 && d.Reason != "p" {
			t.Fatalf("block without verification = %q, want the prompt verbatim", d.Reason)
		}
		if d.Finished != (l.Status == baton.LoopDone) {
			t.Fatalf("Finished = %v with status %s", d.Finished, l.Status)
		}
		// The promise is an honor system only without verify commands.
		if l.Status == baton.LoopDone && l.Outcome == "DONE" && verify%5 != 0 && verify%5 != 2 {
			t.Fatalf("a promise whose verification did not pass (%d) ended the loop: %+v", verify%5, d)
		}
		// A spent budget never lets the loop go another round.
		if d.Action == Block && maxTokens > 0 && l.Spent.Total() >= maxTokens {
			t.Fatalf("blocked with %d of %d tokens spent", l.Spent.Total(), maxTokens)
		}
		if d.Paused != (l.Status == baton.LoopPaused) || (d.Paused && l.PauseReason == "") {
			t.Fatalf("Paused = %v with status %s, reason %q", d.Paused, l.Status, l.PauseReason)
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("loop invalid after Decide: %v", err)
		}
	})
}
