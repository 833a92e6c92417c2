package agentrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCappedLog(t *testing.T) {
	tests := []struct {
		name   string
		jsonl  bool
		writes []string
		want   string
	}{
		{"under the cap", false, []string{"abc", "de"}, "abcde"},
		{"at the cap", false, []string{"0123456789"}, "0123456789"},
		{"over the cap", false, []string{"01234", "56789abc", "def"}, "0123456789\n[baton: log truncated at 10 bytes; 6 more bytes dropped]\n"},
		{"jsonl note", true, []string{"{\"a\":1}\n", "{\"b\":22}\n"}, "{\"a\":1}\n{\"\n{\"type\":\"baton_log_truncated\",\"limit_bytes\":10,\"dropped_bytes\":7}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, err := createLog(path, 10, tt.jsonl)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.writes {
				l.write([]byte(w))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("log = %q, want %q", got, tt.want)
			}
		})
	}
	var nilLog *cappedLog
	nilLog.write([]byte("discarded")) // no LogDir: must not panic
	if err := nilLog.Close(); err != nil {
		t.Errorf("nil cappedLog Close = %v, want nil", err)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := tailBuffer{max: 8}
	for _, s := range []string{"hello ", "wörld", " and more text", "!"} {
		tb.write([]byte(s))
	}
	got, cut := tb.bytes()
	if !cut || !utf8.Valid(got) || !strings.HasSuffix("hello wörld and more text!", string(got)) || len(got) > 8 {
		t.Errorf("tail = %q, %v; want a valid UTF-8 suffix of at most 8 bytes, cut", got, cut)
	}
	small := tailBuffer{max: 8}
	small.write([]byte("abc"))
	if got, cut := small.bytes(); string(got) != "abc" || cut {
		t.Errorf("tail = %q, %v; want \"abc\", false", got, cut)
	}
}
