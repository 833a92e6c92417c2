package fsstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/safefile"

	"github.com/google/go-cmp/cmp"
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
		`{"timestamp":"2026-11-22T09:00:00Z","file_path":"a.go","source":"tool","confidence":0.5,"count":12,"first":"2026-11-20T09:00:00Z","weight":3.25}`,
		`{"count":1.0}`, `{"count":1e2}`, `{"count":-0}`, `{"count":99999999999999999999}`, `{"weight":1e400}`,
		`{"compacted":{"version":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast logEntry
		if !fastRelevantFile(line, &fast) {
			return
		}
		var slow logEntry
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", line, err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("decoders disagree on %q (-json +fast):\n%s", line, diff)
		}
	})
}

// FuzzSkipBefore: a line the since-filter passes over without decoding
// is one whose touch is before since, so a listing loses nothing by it.
func FuzzSkipBefore(f *testing.F) {
	f.Add([]byte(`{"timestamp":"2026-11-22T09:00:00Z","file_path":"a.go","source":"tool","confidence":0.5}`), int64(1795000000))
	f.Add([]byte(`{"timestamp":"2026-11-22T09:00:00.999999Z","file_path":"a.go"}`), int64(1795000000))
	f.Add([]byte(`{"timestamp":"2026-11-22T09:00:00+01:00","file_path":"a.go"}`), int64(1795000000))
	f.Fuzz(func(t *testing.T, line []byte, since int64) {
		at := time.Unix(since%(1<<34), 0).UTC()
		var e logEntry
		if skipBefore(at)(line, &e) != safefile.ErrSkipLine {
			return
		}
		var full logEntry
		if err := decodeRelevantFile(line, &full); err == nil && !full.Timestamp.Before(at) {
			t.Fatalf("skipped %q, a touch at %v, not before %v", line, full.Timestamp, at)
		}
	})
}
