package goaltree

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestUpdateTaxonomy(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxChildren: 4, MaxDepth: 4, MaxAttempts: 2}
	tree := func() *Node {
		n := leaf("2", 2)
		n.Attempts = 1
		return internal("root", 0, passed(leaf("1", 1)), n)
	}
	tests := []struct {
		name     string
		res      Result
		agentErr string
		guard    GuardResult
		want     Verdict
		attempts int
		passes   bool
	}{
		{"done and guard pass", Result{Status: "done"}, "", guardPass, Verdict{Status: "done", Guard: "pass", Passed: true}, 1, true},
		{"done and guard fail", Result{Status: "done"}, "", guardFail, Verdict{Status: "done", Guard: "fail", AttemptSpent: true}, 2, false},
		{"retry", Result{Status: "retry"}, "", guardSkipped, Verdict{Status: "retry", Guard: "skipped", AttemptSpent: true}, 2, false},
		{"agent error ignores a passing guard", Result{Status: "done"}, "edited tree.json", guardPass, Verdict{Status: "agent_error", Guard: "skipped", AttemptSpent: true, AgentError: "edited tree.json"}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tree()
			saved := encode(before)
			after, v, err := update(before, "2", &tt.res, tt.agentErr, tt.guard, lim)
			if err != nil {
				t.Fatalf("Update error: %v", err)
			}
			if diff := cmp.Diff(tt.want, v); diff != "" {
				t.Errorf("Update verdict mismatch (-want +got):\n%s", diff)
			}
			n := after.Find("2")
			if n.Attempts != tt.attempts || n.Passes != tt.passes || after.Passes != tt.passes {
				t.Errorf("Update node 2 = attempts %d passes %v (root passes %v), want %d, %v", n.Attempts, n.Passes, after.Passes, tt.attempts, tt.passes)
			}
			if string(encode(before)) != string(saved) {
				t.Error("Update changed the tree before")
			}
		})
	}
}

func TestUpdateAttemptsSaturate(t *testing.T) {
	t.Parallel()
	n := leaf("root", 0)
	n.MaxAttempts = 2
	res := &Result{Status: "retry"}
	// The third retry hits a stuck leaf, which Select never offers;
	// Update still never counts past max_attempts.
	for i, want := range []int{1, 2, 2} {
		after, _, err := update(n, "root", res, "", guardSkipped, Limits{MaxAttempts: 2})
		if err != nil {
			t.Fatalf("Update %d error: %v", i, err)
		}
		if after.Attempts != want {
			t.Fatalf("after retry %d attempts = %d, want %d", i+1, after.Attempts, want)
		}
		n = after
	}
	if !n.Stuck() || Select(n).State != Stuck {
		t.Errorf("a leaf with %d/%d attempts is not stuck", n.Attempts, n.MaxAttempts)
	}
}

func TestUpdateDecomposition(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxChildren: 4, MaxDepth: 4, MaxAttempts: 5}
	root := leaf("root", 0)
	root.Next = nextDecompose
	kids := []ChildSpec{
		{Title: " Parser ", Goal: "parse", Acceptance: []string{" parses 1+2 "}, Next: "execute"},
		{Title: "Evaluator", Goal: "eval", Acceptance: []string{"evaluates"}, Next: "decompose"},
	}
	after, v, err := update(root, "root", &Result{Status: "decomposed", Children: kids}, "", guardSkipped, lim)
	if err != nil {
		t.Fatalf("Update error: %v", err)
	}
	if diff := cmp.Diff([]string{"1", "2"}, v.Added); diff != "" {
		t.Errorf("children ids under the root (-want +got):\n%s", diff)
	}
	c := after.Children[0]
	if c.Title != "Parser" || c.Acceptance[0] != "parses 1+2" || c.Order != 1 || c.MaxAttempts != 5 || c.Attempts != 0 || c.Passes || v.AttemptSpent {
		t.Errorf("first child = %+v (verdict %+v), want trimmed text, order 1, runner-owned fields from the runner", c, v)
	}
	// Deeper children are named <parent>.<n>.
	after, v, err = update(after, "2", &Result{Status: "decomposed", Children: kids[:1]}, "", guardSkipped, lim)
	if err != nil || len(v.Added) != 1 || v.Added[0] != "2.1" {
		t.Fatalf("Update(2) = %+v, %v; want child 2.1", v, err)
	}
	if sel := Select(after); sel.Node.ID != "1" {
		t.Errorf("Select after decomposition = %s, want 1", sel.Node.ID)
	}
}

func TestUpdateRefusesNonLeaf(t *testing.T) {
	t.Parallel()
	tree := internal("root", 0, leaf("1", 1))
	if _, _, err := update(tree, "root", &Result{Status: "done"}, "", guardPass, Limits{}); baton.ErrorCode(err) != baton.Internal {
		t.Errorf("Update on an internal node = %v, want Internal", err)
	}
}

func TestDescribeTreeEdit(t *testing.T) {
	t.Parallel()
	before := internal("root", 0, passed(leaf("1", 1)), leaf("2", 2))
	edit := func(f func(*Node)) []byte {
		t := before.Clone()
		f(t)
		return encode(t)
	}
	tests := []struct {
		name   string
		edited []byte
		want   string
	}{
		{"garbage", []byte("{"), "not a goal tree"},
		{"passed node changed", edit(func(t *Node) { t.Find("1").Title = "x" }), "passed node changed"},
		{"marked itself passed", edit(func(t *Node) { t.Find("2").Passes = true }), "runner-owned fields of node 2"},
		{"relaxed acceptance", edit(func(t *Node) { t.Find("2").Acceptance = nil }), "edited node 2"},
		{"added a node", edit(func(t *Node) { t.Children = append(t.Children, leaf("9", 9)) }), "added node 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeTreeEdit(before, tt.edited)
			if !strings.Contains(got, tt.want) || !strings.Contains(got, "reverted") {
				t.Errorf("describeTreeEdit() = %q, want it to mention %q and the revert", got, tt.want)
			}
		})
	}
}
