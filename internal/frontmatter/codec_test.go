package frontmatter

import (
	"github.com/baton-agent/baton/internal/golden"

	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func ptr[T any](v T) *T { return &v }

func samplePacket() *baton.Packet {
	t0 := time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)
	p := &baton.Packet{
		ID: "20261122T093400Z-auth-refactor", CreatedAt: t0, UpdatedAt: t0.Add(time.Hour),
		Status: baton.PacketActive, Purpose: "Finish the auth refactor: JWT, then sessions",
		Source: "claude", SessionID: "5b1c0a2e-1111-4222-8333-944445555666",
		TranscriptPath:         "/home/u/.claude/projects/-home-u-app/5b1c.jsonl",
		RelevantFilesConfirmed: []string{"internal/auth/jwt.go", `odd "quoted" name.go`},
		RelevantFilesSuggested: []string{},
		Validators:             []string{"go test ./internal/auth/..."},
		LoopPromise:            ptr("DONE"),
		LoopMaxIterations:      5,
		Preamble:               "\n",
	}
	for _, h := range baton.PacketSections {
		p.Sections = append(p.Sections, baton.Section{Heading: h, Body: "\n" + h + " text.\n\n"})
	}
	p.Sections[len(p.Sections)-1].Body = "\nLast.\n"
	return p
}

func TestPacketGolden(t *testing.T) {
	t.Parallel()
	got := EncodePacket(samplePacket())
	golden.Check(t, "packet.golden.md", got)
	p, err := DecodePacket(got)
	if err != nil {
		t.Fatalf("DecodePacket(encoded) error: %v", err)
	}
	if diff := cmp.Diff(samplePacket(), p); diff != "" {
		t.Errorf("decode(encode(p)) mismatch (-want +got):\n%s", diff)
	}
	if again := EncodePacket(p); string(again) != string(got) {
		t.Errorf("encode(decode(b)) is not byte-identical:\n%s", cmp.Diff(string(got), string(again)))
	}
}

// A file a person edited keeps what baton does not know: unknown keys (with
// their formatting and continuation lines), unknown sections, preamble text,
// headings inside code fences.
func TestPacketUnknownsSurvive(t *testing.T) {
	t.Parallel()
	in := `---
id: 20261122T093400Z-x
owner: "team-a"   # a comment
created_at: 2026-11-22T09:34:00Z
updated_at: 2026-11-22T09:34:00Z
status: draft
purpose: "x: y"
labels:
  - one
  - two
---
Free text a person added.

## Intent

Do x.

## Custom Notes From Bob

` + "```md\n## Not a heading\n```" + `

## Next Prompt (Draft)

Go.
`
	p, err := DecodePacket([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	wantExtra := []baton.Field{
		{Key: "owner", Raw: "owner: \"team-a\"   # a comment\n"},
		{Key: "labels", Raw: "labels:\n  - one\n  - two\n"},
	}
	if diff := cmp.Diff(wantExtra, p.Extra); diff != "" {
		t.Errorf("Extra mismatch (-want +got):\n%s", diff)
	}
	var heads []string
	for _, s := range p.Sections {
		heads = append(heads, s.Heading)
	}
	if diff := cmp.Diff([]string{"Intent", "Custom Notes From Bob", "Next Prompt (Draft)"}, heads); diff != "" {
		t.Errorf("headings mismatch (-want +got):\n%s", diff)
	}
	if p.Purpose != "x: y" {
		t.Errorf("Purpose = %q, want %q", p.Purpose, "x: y")
	}
	out := EncodePacket(p)
	for _, want := range []string{"owner: \"team-a\"   # a comment\n", "labels:\n  - one\n  - two\n", "Free text a person added.", "## Not a heading", "## Custom Notes From Bob"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("re-encoded packet lost %q:\n%s", want, out)
		}
	}
	// And the re-encoded file is stable from then on.
	p2, err := DecodePacket(out)
	if err != nil {
		t.Fatal(err)
	}
	if again := EncodePacket(p2); string(again) != string(out) {
		t.Errorf("second rewrite changed bytes:\n%s", cmp.Diff(string(out), string(again)))
	}
}

func TestDecodePacketErrors(t *testing.T) {
	t.Parallel()
	valid := "id: 20261122T093400Z-x\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: draft\npurpose: p\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty file", "", "empty file"},
		{"no frontmatter", "# hello\n", "start with a --- line"},
		{"unclosed", "---\nid: x\n", "not closed"},
		{"bad yaml", "---\nid: [x\n---\n", "line 2: frontmatter is outside the YAML baton reads: a list or map not closed"},
		{"not a mapping", "---\n- a\n---\n", "key: value"},
		{"duplicate key", "---\n" + valid + "status: done\n---\n", `"status" appears twice`},
		{"missing purpose", "---\nid: 20261122T093400Z-x\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: draft\n---\n", `"purpose" is missing`},
		{"bad status", "---\n" + strings.Replace(valid, "draft", "finished", 1) + "---\n", "status \"finished\""},
		{"bad time", "---\n" + strings.Replace(valid, "2026-11-22T09:34:00Z\nupdated", "yesterday\nupdated", 1) + "---\n", "created_at: want an ISO 8601"},
		{"traversal id", "---\n" + strings.Replace(valid, "20261122T093400Z-x", "../../etc/passwd", 1) + "---\n", "invalid packet id"},
		{"bad list", "---\n" + valid + "validators: {a: b}\n---\n", "a map key that is not a double-quoted string"},
		{"map for a list", "---\n" + valid + "validators: {\"a\": \"b\"}\n---\n", "validators: want a list"},
		{"bad int", "---\n" + valid + "loop_max_iterations: many\n---\n", "want a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodePacket([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodePacket(%q) error = %v, want one containing %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestDecodePacketAcceptsJSONArrayStrings(t *testing.T) {
	t.Parallel()
	in := "---\nid: 20261122T093400Z-x\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: draft\npurpose: p\n" +
		"relevant_files_confirmed: '[\"a.go\", \"b.go\"]'\nvalidators: null\nloop_promise: null\n---\n"
	p, err := DecodePacket([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a.go", "b.go"}, p.RelevantFilesConfirmed); diff != "" {
		t.Errorf("RelevantFilesConfirmed mismatch (-want +got):\n%s", diff)
	}
	if p.Validators != nil || p.LoopPromise != nil {
		t.Errorf("null fields decoded as %v, %v; want nil, nil", p.Validators, p.LoopPromise)
	}
}

func TestScalarQuoting(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"plain words", "x: y", "#hash", "a #b", "null", "~", "true", "123", "-lead", "trailing ",
		" leading", "multi\nline", `back\slash`, `"quoted"`, "tab\there", "ünïcödé", "2026-11-22T09:34:00Z",
		"[not a list]", "{not: map}", "@at", "`tick`", "a:b", "end:", "",
	} {
		t.Run(v, func(t *testing.T) {
			p := samplePacket()
			p.Purpose = v + "x" // purpose must not be empty
			p.Source = v
			got, err := DecodePacket(EncodePacket(p))
			if err != nil {
				t.Fatalf("DecodePacket(EncodePacket(%q)) error: %v\n%s", v, err, EncodePacket(p))
			}
			if got.Purpose != v+"x" || got.Source != v {
				t.Errorf("round trip of %q gave purpose %q, source %q", v, got.Purpose, got.Source)
			}
		})
	}
}

func TestParseSectionsFences(t *testing.T) {
	t.Parallel()
	body := "pre\n## A\n```\n## not\n```\n~~~~\n## still not\n~~~\n## nor this\n~~~~\n## B\nb ##\n### sub\n##C\n## D ##\n"
	pre, secs := ParseSections(body)
	if pre != "pre\n" {
		t.Errorf("preamble = %q, want %q", pre, "pre\n")
	}
	var heads []string
	for _, s := range secs {
		heads = append(heads, s.Heading)
	}
	if diff := cmp.Diff([]string{"A", "B", "D"}, heads); diff != "" {
		t.Errorf("headings mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(secs[1].Body, "### sub\n##C\n") {
		t.Errorf("section B body = %q; want it to keep ### and ##C lines", secs[1].Body)
	}
}

func sampleLoop() *baton.Loop {
	t0 := time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)
	return &baton.Loop{
		ID: "20261122T093400Z-fix-tests", CreatedAt: t0, UpdatedAt: t0,
		Status: baton.LoopActive, Iteration: 3, MaxIterations: 20,
		CompletionPromises: []string{"ALL TESTS PASS", "BLOCKED"},
		SourcePacketID:     "20261122T090000Z-auth", SessionID: "abc-123", ConsecutiveBlocks: 2,
		Prompt: "Fix the tests.\n---\n## Notes\nnot the real notes\n```\n## fenced\n```\n---",
		Notes:  "\n- 2026-11-22T09:34:00Z started\n",
	}
}

func TestLoopGoldenAndPromptVerbatim(t *testing.T) {
	t.Parallel()
	l := sampleLoop()
	got := EncodeLoop(l)
	golden.Check(t, "loop.golden.md", got)
	back, err := DecodeLoop(got)
	if err != nil {
		t.Fatalf("DecodeLoop error: %v", err)
	}
	if diff := cmp.Diff(l, back); diff != "" {
		t.Errorf("decode(encode(loop)) mismatch (-want +got):\n%s", diff)
	}
	if string(EncodeLoop(back)) != string(got) {
		t.Error("encode(decode(b)) is not byte-identical")
	}
}

func TestLoopPromiseForms(t *testing.T) {
	t.Parallel()
	base := "---\nid: l1\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: active\niteration: 0\nmax_iterations: 0\n"
	tests := []struct {
		line string
		want []string
	}{
		{"completion_promise: null\n", nil},
		{"completion_promise: DONE\n", []string{"DONE"}},
		{"completion_promise: \"ALL DONE\"\n", []string{"ALL DONE"}},
		{"completion_promise: [\"DONE\", \"BLOCKED\"]\n", []string{"DONE", "BLOCKED"}},
		{"completion_promise: '[\"DONE\"]'\n", []string{"DONE"}},
	}
	for _, tt := range tests {
		l, err := DecodeLoop([]byte(base + tt.line + "---\n\n## Loop Prompt\n\ngo\n"))
		if err != nil {
			t.Fatalf("DecodeLoop(%q) error: %v", tt.line, err)
		}
		if diff := cmp.Diff(tt.want, l.CompletionPromises); diff != "" {
			t.Errorf("DecodeLoop(%q) promises mismatch (-want +got):\n%s", tt.line, diff)
		}
		if l.Prompt != "go" {
			t.Errorf("prompt = %q, want %q", l.Prompt, "go")
		}
	}
}

func TestDecodeLoopErrors(t *testing.T) {
	t.Parallel()
	base := "---\nid: l1\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: %s\n---\n%s"
	for _, tc := range []struct{ status, body, want string }{
		{"active", "no prompt here\n", "no \"## Loop Prompt\" section"},
		{"active", "## Loop Prompt\n\n\n## Notes\n", "loop prompt is empty"},
		{"done", "## Loop Prompt\n\ngo\n", "needs an outcome"},
		{"spinning", "## Loop Prompt\n\ngo\n", "status \"spinning\""},
	} {
		_, err := DecodeLoop([]byte(strings.Replace(strings.Replace(base, "%s", tc.status, 1), "%s", tc.body, 1)))
		var se *SyntaxError
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeLoop(status %s, %q) error = %v, want %q", tc.status, tc.body, err, tc.want)
		}
		_ = errors.As(err, &se)
	}
}

// A loop with verify commands, their results, budgets and a usage cursor
// round-trips, and what YAML cannot hold raw (a C1 control in a command)
// is escaped instead of making the file unreadable.
func TestLoopVerifyAndBudgetRoundTrip(t *testing.T) {
	t.Parallel()
	l := sampleLoop()
	t1 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l.Verify = []string{"go test ./...", "test -f ok\u0085\u0090\x7f.txt"}
	l.VerifyTimeout = 90 * time.Second
	l.VerifyRuns = []baton.VerifyRun{{At: t1, Iteration: 3, Promise: "ALL TESTS PASS", Checks: []baton.VerifyCheck{
		{Command: "go test ./...", ExitCode: 1, DurationMS: 2100, Confined: true},
	}}, {At: t1, Iteration: 4, Promise: "ALL TESTS PASS", Error: "not started: --sandbox=required and no \u0090 Landlock"}}
	l.Status, l.PauseReason = baton.LoopPaused, "the token budget is spent: 120000 of 100000"
	l.MaxTokens, l.MaxCostUSD, l.MaxDuration = 100000, 2.5, 2*time.Hour
	l.ActiveFor = 95 * time.Minute
	l.Spent = baton.Spend{Tokens: baton.Tokens{Input: 100, CacheRead: 90000, CacheWrite: 20000, Output: 9900}, CostUSD: 0.4213, Unpriced: []string{"claude-opus-5-5"}}
	l.Usage = baton.UsageCursor{Path: "/home/u/.claude/projects/x/s.jsonl", Offset: 123456, Since: t1, LastID: "msg_01", Totals: &baton.Tokens{Input: 5, Output: 7}}
	got := EncodeLoop(l)
	golden.Check(t, "loop_verify.golden.md", got)
	back, err := DecodeLoop(got)
	if err != nil {
		t.Fatalf("DecodeLoop error: %v\n%s", err, got)
	}
	if diff := cmp.Diff(l, back); diff != "" {
		t.Errorf("decode(encode(loop)) mismatch (-want +got):\n%s", diff)
	}
	if string(EncodeLoop(back)) != string(got) {
		t.Error("encode(decode(b)) is not byte-identical")
	}
	// A person may edit the structured fields as one line of JSON; the
	// nested block YAML the seed's formats never use is refused, naming
	// its line, rather than read.
	edited := strings.Replace(string(got), "max_duration: 2h0m0s\n", "max_duration: 2h\nverify_runs: [{\"at\": \"2026-11-22T10:00:00Z\", \"iteration\": 5, \"passed\": true, \"checks\": []}]\n", 1)
	edited = strings.Replace(edited, "verify_runs: [", "x_old_runs: [", 1)
	back, err = DecodeLoop([]byte(edited))
	if err != nil {
		t.Fatalf("DecodeLoop(edited runs) error: %v\n%s", err, edited)
	}
	if len(back.VerifyRuns) != 1 || !back.VerifyRuns[0].Passed || back.VerifyRuns[0].Iteration != 5 || !back.VerifyRuns[0].At.Equal(t1) || back.MaxDuration != 2*time.Hour {
		t.Errorf("edited verify_runs = %+v, max_duration %s", back.VerifyRuns, back.MaxDuration)
	}
	nested := strings.Replace(string(got), "max_duration: 2h0m0s\n", "max_duration: 2h\nx_runs:\n  - at: 2026-11-22T10:00:00Z\n    iteration: 5\n", 1)
	if _, err := DecodeLoop([]byte(nested)); err == nil || !strings.Contains(err.Error(), "line 20: frontmatter is outside the YAML baton reads") {
		t.Errorf("DecodeLoop(nested YAML) error = %v, want one naming line 20", err)
	}
	for _, bad := range []string{"max_tokens: -1", "max_duration: soon", "verify_timeout: 11m", "max_cost_usd: NaN", "spent: [1, 2]"} {
		in := strings.Replace(string(got), "status: paused\n", "status: paused\n"+bad+"\n", 1)
		if _, err := DecodeLoop([]byte(in)); err == nil {
			t.Errorf("DecodeLoop with %q: no error", bad)
		}
	}
}
