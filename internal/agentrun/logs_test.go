package agentrun

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCappedLog(t *testing.T) {
	t.Parallel()
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
