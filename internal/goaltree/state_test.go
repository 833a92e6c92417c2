package goaltree

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestDecodeRunState(t *testing.T) {
	t.Parallel()
	st := &RunState{
		SchemaVersion: 1, RunID: "calc", Branch: "runner/calc", CreatedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), NextIter: 3,
		Feedback: &Feedback{Iter: 2, Node: "1", Status: statusRetry, Guard: guardSkipped, Summary: "half"},
		Last:     &IterationRecord{Iter: 2, Node: "1", Status: statusRetry, Guard: guardSkipped, Attempt: 1},
		InFlight: &InFlight{Iter: 3, Node: "1", Attempt: 2},
	}
	got, err := decodeRunState(encodeJSON(st))
	if err != nil {
		t.Fatalf("DecodeRunState error: %v", err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
	for _, in := range []string{
		`null`, `{}`, `{"run_id":"x","next_iter":0}`, `{"run_id":"../x","next_iter":1}`,
		`{"run_id":"x","next_iter":1,"unknown":true}`,
		`{"run_id":"x","next_iter":2,"in_flight":{"iter":1,"node":"1"}}`,
		`{"run_id":"x","next_iter":2,"feedback":{"iter":1,"node":"1","status":"runner_error"}}`,
	} {
		if _, err := decodeRunState([]byte(in)); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("DecodeRunState(%s) = %v, want an Invalid error", in, err)
		}
	}
}

func FuzzDecodeRunState(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"run_id":"calc","next_iter":2,"feedback":{"iter":1,"node":"root","status":"retry","guard":"skipped","summary":"s"},"totals":{"iterations":1}}`))
	f.Add([]byte(`{"run_id":"a","next_iter":5,"in_flight":{"iter":5,"node":"1.2","attempt":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeRunState(data)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("DecodeRunState error %v is not Invalid", err)
			}
			return
		}
		if !baton.ValidID(st.RunID) || st.NextIter < 1 || (st.InFlight != nil && st.InFlight.Iter != st.NextIter) {
			t.Fatalf("DecodeRunState accepted %+v", st)
		}
		again, err := decodeRunState(encodeJSON(st))
		if err != nil {
			t.Fatalf("DecodeRunState(encode(%+v)) error: %v", st, err)
		}
		if diff := cmp.Diff(st, again); diff != "" {
			t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
		}
	})
}
