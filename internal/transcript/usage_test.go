package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// The usage each harness's real transcript reports (the fixtures are
// sessions of the real harnesses against a scripted model, with the
// counts changed to tell the fields apart).
func TestReadUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		droid      bool
		want       Usage
	}{
		{"claude", "testdata/usage_claude.jsonl", false, Usage{ByModel: map[string]baton.Tokens{
			// msg_002's two lines count once, at the larger output.
			"claude-opus-5-5": {Input: 17, CacheWrite: 2150, CacheRead: 4100, Output: 95},
		}, Tools: []string{baton.Digest("Write", `{"file_path":"/home/u/app/hello.txt","content":"hello\n"}`)}, Read: true}},
		{"codex", "testdata/usage_codex.jsonl", false, Usage{ByModel: map[string]baton.Tokens{
			// OpenAI's input includes the cached input; a repeated
			// token_count (same totals) adds nothing.
			"gpt-5.5": {Input: 400, CacheRead: 2300, Output: 200},
		}, Read: true}},
		{"pi", "testdata/usage_pi.jsonl", false, Usage{
			ByModel:  map[string]baton.Tokens{"scripted": {Input: 320, Output: 55, CacheRead: 2200, CacheWrite: 64}},
			Recorded: map[string]float64{"scripted": 0.0123 + 0.0045},
			Tools:    []string{baton.Digest("write", `{"content":"hello\n","path":"/home/u/app/hello.txt"}`)},
			Read:     true,
		}},
		{"droid", "testdata/usage_droid.jsonl", true, Usage{ByModel: map[string]baton.Tokens{
			"custom:scripted-0": {Input: 30, Output: 15, CacheWrite: 500, CacheRead: 700},
		}, Tools: []string{baton.Digest("Create", `{"content":"hello\n","file_path":"/home/u/app/hello.txt"}`)}, Read: true}},
		{"missing", "testdata/nope.jsonl", false, Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cur, err := ReadUsage(tt.file, baton.UsageCursor{}, UsageOptions{Droid: tt.droid})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 })); diff != "" {
				t.Errorf("ReadUsage(%s) mismatch (-want +got):\n%s", tt.file, diff)
			}
			// Read again from the cursor: nothing new, nothing counted.
			again, _, err := ReadUsage(tt.file, cur, UsageOptions{Droid: tt.droid})
			if err != nil || len(again.ByModel) != 0 || len(again.Tools) != 0 {
				t.Errorf("second ReadUsage = %+v, %v; want nothing", again, err)
			}
		})
	}
}

// Lines stamped before the cursor's Since are the session's work before
// the loop: not counted, though Codex's running totals still move.
func TestReadUsageSince(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 26, 0, 55, 44, 0, time.UTC) // after Claude's msg_001, Codex's first total
	got, _, err := ReadUsage("testdata/usage_claude.jsonl", baton.UsageCursor{Since: since}, UsageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (baton.Tokens{Input: 5, CacheWrite: 150, CacheRead: 4100, Output: 55}); got.Total() != want {
		t.Errorf("claude since %s = %+v, want %+v", since, got.Total(), want)
	}
	since = time.Date(2026, 11, 26, 0, 55, 47, 30_000_000, time.UTC)
	got, _, err = ReadUsage("testdata/usage_codex.jsonl", baton.UsageCursor{Since: since}, UsageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (baton.Tokens{Input: 200, CacheRead: 1300, Output: 120}); got.Total() != want {
		t.Errorf("codex since %s = %+v, want %+v (the second response only)", since, got.Total(), want)
	}
}

// A transcript read a little at a time, as it grows and as each stop's
// read limit cuts it, adds up to what one read of the whole file finds.
func TestReadUsageIncremental(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/usage_claude.jsonl", "testdata/usage_codex.jsonl", "testdata/usage_pi.jsonl"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		whole, _ := readAll(t, data, 0)
		for _, step := range []int{7, 100, 1000} {
			if got, _ := readAll(t, data, step); !cmp.Equal(got, whole) {
				t.Errorf("%s in steps of %d = %+v, want %+v", file, step, got, whole)
			}
		}
	}
}

// readAll reads data as a growing transcript: step bytes appear between
// reads (0: all at once), and each read takes at most 3*step+1 bytes.
func readAll(t testing.TB, data []byte, step int) (Usage, baton.UsageCursor) {
	t.Helper()
	var cur baton.UsageCursor
	var sum Usage
	opts := UsageOptions{MaxRead: DefaultMaxUsageRead, MaxLine: MaxUsageLine, chunk: 256 << 10}
	if step > 0 {
		opts.MaxRead, opts.chunk = int64(3*step+1), step
	}
	r := bytes.NewReader(data)
	written := 0
	for {
		if step > 0 {
			written = min(written+step, len(data))
		} else {
			written = len(data)
		}
		u, next, err := readUsageFrom(r, int64(written), cur, opts)
		if err != nil {
			t.Fatal(err)
		}
		for m, tok := range u.ByModel {
			sum.add(m, tok, u.Recorded[m], hasKey(u.Recorded, m))
		}
		if written == len(data) && cmp.Equal(next, cur) {
			return sum, cur
		}
		cur = next
	}
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

func jsonMarshal(s string) ([]byte, error) { return json.Marshal(s) }

// A line too long to be a usage line is skipped, even when it is longer
// than one read; the lines after it count.
func TestReadUsageSkipsLongLines(t *testing.T) {
	t.Parallel()
	line := `{"type":"assistant","timestamp":"2026-11-26T00:55:43Z","message":{"id":"m%d","model":"m","usage":{"input_tokens":1,"output_tokens":2}},"x":"%s"}` + "\n"
	data := fmt.Sprintf(line, 1, "") + fmt.Sprintf(line, 2, strings.Repeat("y", 5000)) + fmt.Sprintf(line, 3, "")
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var cur baton.UsageCursor
	var total baton.Tokens
	for i := 0; i < 100; i++ {
		u, next, err := ReadUsage(p, cur, UsageOptions{MaxLine: 1000, MaxRead: 700, chunk: 300})
		if err != nil {
			t.Fatal(err)
		}
		total = total.Add(u.Total())
		if cmp.Equal(next, cur) {
			break
		}
		cur = next
	}
	if want := (baton.Tokens{Input: 2, Output: 4}); total != want {
		t.Errorf("usage around a long line = %+v, want %+v", total, want)
	}
	if cur.Offset != int64(len(data)) {
		t.Errorf("cursor at %d, want the end %d", cur.Offset, len(data))
	}
}

// A transcript rewritten shorter than the cursor starts again, counting
// only what is stamped after the restart.
func TestReadUsageRestartsAShorterTranscript(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/usage_claude.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	u, cur, err := ReadUsage(p, baton.UsageCursor{Path: p, Offset: int64(len(data))}, UsageOptions{Now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil || u.Total() != (baton.Tokens{}) || cur.Offset == 0 || !cur.Since.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("ReadUsage of a shorter file = %+v, %+v, %v", u, cur, err)
	}
}

// A Droid session that began before the loop: what it spent before the
// loop's first stop is its baseline, not the loop's.
func TestReadDroidUsageBaseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := filepath.Join(dir, "s.jsonl")
	settings := filepath.Join(dir, "s.settings.json")
	copyFile(t, "testdata/usage_droid.jsonl", tr)
	copyFile(t, "testdata/usage_droid.settings.json", settings)
	since := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) // after the session's first line
	u, cur, err := ReadUsage(tr, baton.UsageCursor{Since: since}, UsageOptions{Droid: true})
	if err != nil || u.Total() != (baton.Tokens{}) || cur.Totals == nil || cur.Totals.Input != 30 {
		t.Fatalf("first read of an older Droid session = %+v, %+v, %v; want a baseline", u, cur, err)
	}
	b, _ := os.ReadFile(settings)
	b = bytes.Replace(b, []byte(`"inputTokens": 30`), []byte(`"inputTokens": 75`), 1)
	if err := os.WriteFile(settings, b, 0o644); err != nil {
		t.Fatal(err)
	}
	u, _, err = ReadUsage(tr, cur, UsageOptions{Droid: true})
	if err != nil || u.Total() != (baton.Tokens{Input: 45}) {
		t.Errorf("second read = %+v, %v; want the 45 new input tokens", u.Total(), err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Whatever bytes a transcript holds, reading it in pieces as it grows
// adds up to reading it at once, and no count is negative.
func FuzzReadUsage(f *testing.F) {
	for _, file := range []string{"testdata/usage_claude.jsonl", "testdata/usage_codex.jsonl", "testdata/usage_pi.jsonl"} {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b, uint8(13))
		}
	}
	f.Add([]byte(`{"type":"assistant","message":{"id":"a","usage":{"input_tokens":-5,"output_tokens":1e300}}}`+"\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		if len(data) > 1<<14 {
			return
		}
		whole, _ := readAll(t, data, 0)
		pieces, _ := readAll(t, data, int(step)%64+1)
		if !cmp.Equal(whole, pieces) {
			t.Fatalf("whole %+v, in steps of %d %+v\ninput %.500q", whole, int(step)%64+1, pieces, data)
		}
		for m, tok := range whole.ByModel {
			if tok.Input < 0 || tok.CacheRead < 0 || tok.CacheWrite < 0 || tok.Output < 0 {
				t.Fatalf("negative count for %q: %+v", m, tok)
			}
		}
	})
}

// A usage line written from known numbers reads back as those numbers,
// in each harness's shape.
func FuzzUsageLine(f *testing.F) {
	f.Add(uint32(10), uint32(2000), uint32(300), uint32(5), "claude-opus-5-5")
	f.Fuzz(func(t *testing.T, in, cacheRead, cacheWrite, out uint32, model string) {
		model = boundModel(strings.ToValidUTF8(model, "\uFFFD"))
		want := baton.Tokens{Input: int64(in), CacheRead: int64(cacheRead), CacheWrite: int64(cacheWrite), Output: int64(out)}
		q := func(s string) string { b, _ := jsonMarshal(s); return string(b) }
		lines := map[string]string{
			"claude": fmt.Sprintf(`{"type":"assistant","timestamp":"2026-11-26T00:55:43Z","message":{"id":"msg_1","model":%s,"role":"assistant","usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d}}}`,
				q(model), in, cacheWrite, cacheRead, out),
			"pi": fmt.Sprintf(`{"type":"message","timestamp":"2026-11-26T00:55:43Z","message":{"role":"assistant","model":%s,"usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":%d,"cost":{"total":0}}}}`,
				q(model), in, out, cacheRead, cacheWrite),
			"codex": fmt.Sprintf(`{"type":"turn_context","payload":{"model":%s}}`+"\n"+`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"cache_write_input_tokens":%d,"output_tokens":%d}}}}`,
				q(model), uint64(in)+uint64(cacheRead)+uint64(cacheWrite), cacheRead, cacheWrite, out),
		}
		for harness, line := range lines {
			if model == "<synthetic>" && harness == "claude" {
				continue
			}
			u, _ := readAll(t, []byte(line+"\n"), 0)
			got := u.ByModel[model]
			if want == (baton.Tokens{}) && len(u.ByModel) == 0 {
				continue // nothing spent is nothing recorded
			}
			if got != want || len(u.ByModel) > 1 {
				t.Fatalf("%s line %s read as %+v, want %+v for %q", harness, line, u.ByModel, want, model)
			}
		}
	})
}

// A loop started in a session starts counting at the transcript's end:
// the session's work before it is not the loop's.
func TestStartCursor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	data, _ := os.ReadFile("testdata/usage_claude.jsonl")
	torn := append(append([]byte{}, data...), `{"type":"assistant","message":{"id":"x"`...)
	if err := os.WriteFile(p, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	cur := StartCursor(p, false, time.Now())
	if cur.Offset != int64(len(data)) || cur.Path != p {
		t.Fatalf("StartCursor = %+v, want offset %d (the torn line read by the first stop)", cur, len(data))
	}
	if u, _, err := ReadUsage(p, cur, UsageOptions{}); err != nil || len(u.ByModel) != 0 {
		t.Errorf("usage right after the start = %+v, %v", u, err)
	}
	// Codex's usage is running totals: a loop started now counts what
	// they grow by, not the thread's whole total at its first stop.
	cx := filepath.Join(dir, "c.jsonl")
	copyFile(t, "testdata/usage_codex.jsonl", cx)
	start := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC) // after the file's lines
	cur = StartCursor(cx, false, start)
	if cur.Totals == nil || cur.Model == "" {
		t.Fatalf("Codex StartCursor = %+v, want the last totals and model", cur)
	}
	f, err := os.OpenFile(cx, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"timestamp":"2026-11-26T01:00:05Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2800,"cached_input_tokens":2300,"output_tokens":250}}}}`+"\n")
	f.Close()
	if u, _, err := ReadUsage(cx, cur, UsageOptions{Now: start}); err != nil || u.Total() != (baton.Tokens{Input: 100, Output: 50}) {
		t.Errorf("Codex usage after the start = %+v, %v; want the 150 tokens the totals grew by", u.Total(), err)
	}
	tr := filepath.Join(dir, "d.jsonl")
	copyFile(t, "testdata/usage_droid.jsonl", tr)
	copyFile(t, "testdata/usage_droid.settings.json", filepath.Join(dir, "d.settings.json"))
	if cur := StartCursor(tr, true, time.Now()); cur.Totals == nil || cur.Totals.Input != 30 {
		t.Errorf("Droid StartCursor = %+v, want its running totals as the baseline", cur)
	}
}

// Codex's tool calls are response items of their own, without usage:
// the reader finds them all the same.
func TestReadUsageCodexTools(t *testing.T) {
	t.Parallel()
	got, _, err := ReadUsage("testdata/codex.jsonl", baton.UsageCursor{}, UsageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{baton.Digest("shell", `"{\"command\":[\"go\",\"test\",\"./...\"]}"`)}
	if diff := cmp.Diff(want, got.Tools); diff != "" || !got.Read {
		t.Errorf("ReadUsage(codex.jsonl).Tools mismatch (-want +got):\n%s (read %v)", diff, got.Read)
	}
}
