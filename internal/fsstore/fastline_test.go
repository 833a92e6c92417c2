package fsstore

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// The fast decoder must agree with encoding/json wherever it answers.
func FuzzDecodeRelevantFile(f *testing.F) {
	for _, s := range []string{
		`{"timestamp":"2026-11-22T09:00:00Z","file_path":"a.go","source":"tool","confidence":0.5}`,
		`{"timestamp":"2026-11-22T09:00:00.123Z","file_path":"dir/b c.go","source":"user","packet_id":"p1","confidence":1}`,
		`{"file_path":"x\"y"}`,
		`{"timestamp":"2026-11-22T09:00:00Z","file_path":"a","file_path":"b"}`,
		`{"confidence":1e3,"file_path":"é"}`,
		`{"confidence":-0,"file_path":""}`,
		`{"confidence":01}`,
		`{}`, `{"x":1}`, `[1]`, `{"file_path":"a",}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast baton.RelevantFile
		if !fastRelevantFile(line, &fast) {
			return
		}
		var slow baton.RelevantFile
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", line, err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("decoders disagree on %q (-json +fast):\n%s", line, diff)
		}
	})
}
