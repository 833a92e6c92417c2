package goaltree

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
)

func TestDecodeResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want *Result // nil: an Invalid error
	}{
		{`{"status":"done","summary":"ok"}`, &Result{Status: "done", Summary: "ok"}},
		{`{"status":"retry","summary":"half","children":null}`, &Result{Status: "retry", Summary: "half"}},
		{`{"status":"decomposed","summary":"s","children":[{"title":"A","goal":"g","acceptance":["x"],"next":"execute"}]}`,
			&Result{Status: "decomposed", Summary: "s", Children: []ChildSpec{{Title: "A", Goal: "g", Acceptance: []string{"x"}, Next: "execute"}}}},
		{`{"status":"agent_error","summary":"s"}`, nil},
		{`{"status":"DONE","summary":"s"}`, nil},
		{`{"summary":"s"}`, nil},
		{`{"status":"done","summary":"s","passes":true}`, nil},
		{`{"status":"done","summary":"s"} {}`, nil},
		{`null`, nil},
		{`"done"`, nil},
		{``, nil},
	}
	for _, tt := range tests {
		got, err := decodeResult([]byte(tt.in))
		if tt.want == nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Errorf("DecodeResult(%s) = %+v, %v; want an Invalid error", tt.in, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("DecodeResult(%s) error: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("DecodeResult(%s) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestSchemaAgreesWithDecode checks the schema agentrun validates against
// with the decoder: what the schema accepts decodes, and the strict variant
// (for codex) requires children while the lenient one does not.
func TestSchemaAgreesWithDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc           string
		strict, loose bool
		decodes       bool
	}{
		{`{"status":"done","summary":"s","children":null}`, true, true, true},
		{`{"status":"done","summary":"s"}`, false, true, true},
		{`{"status":"decomposed","summary":"s","children":[{"title":"A","goal":"g","acceptance":["x"],"next":"execute"}]}`, true, true, true},
		{`{"status":"decomposed","summary":"s","children":[{"title":"A","goal":"g","next":"execute"}]}`, false, false, true},
		{`{"status":"finished","summary":"s","children":null}`, false, false, false},
		{`{"status":"done","summary":"s","children":null,"extra":1}`, false, false, false},
	}
	for _, tt := range tests {
		strictErr := agentrun.Validate(schema(true), []byte(tt.doc))
		looseErr := agentrun.Validate(schema(false), []byte(tt.doc))
		if (strictErr == nil) != tt.strict || (looseErr == nil) != tt.loose {
			t.Errorf("Validate(%s) = strict %v, lenient %v; want ok %v, %v", tt.doc, strictErr, looseErr, tt.strict, tt.loose)
		}
		if _, err := decodeResult([]byte(tt.doc)); (err == nil) != tt.decodes {
			t.Errorf("DecodeResult(%s) = %v, want ok %v", tt.doc, err, tt.decodes)
		}
	}
}

func TestCheckResult(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxChildren: 3, MaxDepth: 3, MaxAttempts: 2}
	exec := leaf("1", 1)
	dec := leaf("2", 2)
	dec.Next = nextDecompose
	child := func(title string) ChildSpec {
		return ChildSpec{Title: title, Goal: "g", Acceptance: []string{"a"}, Next: nextExecute}
	}
	tests := []struct {
		name  string
		node  *Node
		depth int
		res   Result
		want  string // substring of the agent error; "" accepted
	}{
		{"execute done", exec, 1, Result{Status: "done"}, ""},
		{"execute retry", exec, 1, Result{Status: "retry"}, ""},
		{"execute decomposed", exec, 1, Result{Status: "decomposed", Children: []ChildSpec{child("a")}}, "is an execute node"},
		{"done with children", exec, 1, Result{Status: "done", Children: []ChildSpec{child("a")}}, "must not carry children"},
		{"decompose done", dec, 1, Result{Status: "done"}, "is a decompose node"},
		{"decompose retry with children", dec, 1, Result{Status: "retry", Children: []ChildSpec{child("a")}}, "must not carry children"},
		{"decompose retry", dec, 1, Result{Status: "retry"}, ""},
		{"decomposed", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{child("a"), child("b")}}, ""},
		{"no children", dec, 1, Result{Status: "decomposed"}, "at least one child"},
		{"over-decomposition", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{child("a"), child("b"), child("c"), child("d")}}, "over-decomposition (at most 3)"},
		{"duplicate titles", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{child("Same"), child("same")}}, "repeats another child's"},
		{"child without acceptance", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{{Title: "a", Goal: "g", Next: "execute"}}}, "at least one acceptance criterion"},
		{"child without goal", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{{Title: "a", Acceptance: []string{"x"}, Next: "execute"}}}, "goal is empty"},
		{"multi-line title", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{{Title: "a\nb", Goal: "g", Acceptance: []string{"x"}, Next: "execute"}}}, "one line"},
		{"too deep to decompose", dec, 2, Result{Status: "decomposed", Children: []ChildSpec{{Title: "a", Goal: "g", Acceptance: []string{"x"}, Next: "decompose"}}}, "next must be execute"},
		{"decompose child allowed higher up", dec, 1, Result{Status: "decomposed", Children: []ChildSpec{{Title: "a", Goal: "g", Acceptance: []string{"x"}, Next: "decompose"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkResult(tt.node, tt.depth, &tt.res, lim)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("CheckResult() = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"status":"done","summary":"ok"}`))
	f.Add([]byte(`{"status":"decomposed","summary":"s","children":[{"title":"A","goal":"g","acceptance":["x"],"next":"execute"}]}`))
	f.Add([]byte(`{"status":"retry","summary":"s","children":[{"title":"","goal":"","acceptance":[""],"next":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeResult(data)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("DecodeResult error %v is not Invalid", err)
			}
			return
		}
		if !r.Status.AgentReported() {
			t.Fatalf("DecodeResult accepted status %q", r.Status)
		}
		lim := Limits{MaxChildren: 4, MaxDepth: 3, MaxAttempts: 2}
		for _, next := range []NodeNext{nextExecute, nextDecompose} {
			before := leaf("root", 0)
			before.Next = next
			agentErr := checkResult(before, 0, r, lim)
			if r.Status == statusDecomposed && next == nextExecute && agentErr == "" {
				t.Fatalf("CheckResult accepted decomposed on an execute node")
			}
			// Whatever CheckResult accepts, Update turns into a valid tree.
			guard := guardSkipped
			if r.Status == statusDone {
				guard = guardPass
			}
			after, v, err := update(before, "root", r, agentErr, guard, lim)
			if err != nil {
				t.Fatalf("Update after CheckResult %q: %v", agentErr, err)
			}
			if err := after.Validate(); err != nil {
				t.Fatalf("Update produced an invalid tree: %v", err)
			}
			if v.AttemptSpent == v.Passed && v.Status != statusDecomposed {
				t.Fatalf("Update verdict %+v both or neither passed and spent", v)
			}
		}
	})
}
