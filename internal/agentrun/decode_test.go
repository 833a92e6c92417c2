package agentrun

import (
	"github.com/baton-agent/baton/internal/golden"

	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// kindOfStream maps a recorded stream's file name prefix to its executor.
func kindOfStream(name string) kind {
	switch {
	case strings.HasPrefix(name, "claude_"):
		return kindClaude
	case strings.HasPrefix(name, "codex_"):
		return kindCodex
	case strings.HasPrefix(name, "droid_"):
		return kindDroid
	case strings.HasPrefix(name, "pi_"):
		return kindPi
	}
	return kindCommand
}

// TestReplayStreams replays the recorded streams under testdata/streams
// through their decoders and compares what comes out (result and live
// view) with the golden file next to each stream.
func TestReplayStreams(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/streams/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".golden") {
			continue
		}
		n++
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var live bytes.Buffer
			// One byte at a time: no result may depend on how reads split.
			res, found, err := decodeStream(iotest.OneByteReader(bytes.NewReader(data)), newDecoder(kindOfStream(name), newLiveView(&live)))
			if err != nil {
				t.Fatalf("decodeStream: %v", err)
			}
			settle(res, "")
			got := append(mustJSON(t, reportOf(res, found)), "--- live view ---\n"...)
			got = append(got, live.Bytes()...)
			golden.Check(t, strings.TrimPrefix(path, "testdata/")+".golden", got)
		})
	}
	if n < 15 {
		t.Fatalf("found %d recorded streams, want at least 15", n)
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300<<10) // longer than bufio's buffer
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		tooLong int
	}{
		{"empty", "", 100, nil, 0},
		{"last line without newline", "a\nb", 100, []string{"a", "b"}, 0},
		{"crlf", "a\r\nb\r\n", 100, []string{"a", "b"}, 0},
		{"blank lines kept", "a\n\nb\n", 100, []string{"a", "", "b"}, 0},
		{"line longer than the buffer", "a\n" + long + "\nb\n", 1 << 20, []string{"a", long, "b"}, 0},
		{"line longer than max", "a\n" + long + "\nb", 1000, []string{"a", "b"}, 1},
		{"long last line without newline", "a\n" + long, 1 << 20, []string{"a", long}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw bytes.Buffer
			lr := newLineReader(strings.NewReader(tt.in), tt.max, func(b []byte) { raw.Write(b) })
			var got []string
			tooLong := 0
			if err := eachLine(lr, func(b []byte) { got = append(got, string(b)) }, func() { tooLong++ }); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
			if tooLong != tt.tooLong {
				t.Errorf("tooLong = %d, want %d", tooLong, tt.tooLong)
			}
			if raw.String() != tt.in {
				t.Errorf("raw bytes seen = %d bytes, want the %d input bytes unchanged", raw.Len(), len(tt.in))
			}
		})
	}
}

func TestLineReaderReadError(t *testing.T) {
	t.Parallel()
	r := io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(io.ErrUnexpectedEOF))
	lr := newLineReader(r, 100, nil)
	var got []string
	err := eachLine(lr, func(b []byte) { got = append(got, string(b)) }, nil)
	if err != io.ErrUnexpectedEOF {
		t.Errorf("eachLine error = %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if diff := cmp.Diff([]string{"a", "partial"}, got); diff != "" {
		t.Errorf("lines before the error mismatch (-want +got):\n%s", diff)
	}
}

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`{"a":1}`, `{"a":1}`, true},
		{"  \n{\"a\":1}\n", `{"a":1}`, true},
		{"```json\n{\"a\":1}\n```", `{"a":1}`, true},
		{"```\n[1,2]\n```", `[1,2]`, true},
		{"```go\n{\"a\":1}\n```", "", false},
		{`"just a string"`, "", false},
		{`42`, "", false},
		{`{"a":`, "", false},
		{"Here you go: {\"a\":1}", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := extractJSON(tt.in)
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("extractJSON(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSniffType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`{"type":"user","message":{}}`, "user", true},
		{`{"subtype":"init","type":"system"}`, "", false},
		{`{"type":"us\"er"}`, "", false},
		{`{"type":"unterminated`, "", false},
		{` {"type":"user"}`, "", false},
	}
	for _, tt := range tests {
		got, ok := sniffType([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("sniffType(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
