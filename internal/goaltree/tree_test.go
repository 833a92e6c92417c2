package goaltree

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// leaf returns an open execute leaf.
func leaf(id string, order int) *Node {
	return &Node{ID: id, Order: order, Title: "task " + id, Goal: "do " + id, Acceptance: []string{id + " works"}, Next: nextExecute, MaxAttempts: 3, Children: []*Node{}}
}

// internal returns an internal node over kids, its passes derived.
func internal(id string, order int, kids ...*Node) *Node {
	n := leaf(id, order)
	n.Next = nextDecompose
	n.Children = kids
	recomputePasses(n)
	return n
}

func prob(id, msg string) NodeProblem { return NodeProblem{NodeID: id, Message: msg} }

func passed(n *Node) *Node { n.Passes = true; return n }

func stuck(n *Node) *Node { n.Attempts = n.MaxAttempts; return n }

func TestDecodeSortsAndRoundTrips(t *testing.T) {
	t.Parallel()
	in := `{"id":"root","order":0,"title":"Root","goal":"","acceptance":null,"next":"decompose","passes":false,"attempts":0,"max_attempts":3,"children":[
	  {"id":"b","order":2,"title":"B","goal":"g","acceptance":["x"],"next":"execute","passes":false,"attempts":0,"max_attempts":3,"children":null},
	  {"id":"a2","order":1,"title":"A2","goal":"g","acceptance":[],"next":"execute","passes":false,"attempts":1,"max_attempts":3,"children":[]},
	  {"id":"a1","order":1,"title":"A1","goal":"g","acceptance":[],"next":"execute","passes":true,"attempts":0,"max_attempts":3,"children":[]}]}`
	tree, err := decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode error: %v", err)
	}
	var ids []string
	for _, c := range tree.Children {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "b"}, ids); diff != "" {
		t.Errorf("children not sorted by (order, id) (-want +got):\n%s", diff)
	}
	if tree.Acceptance == nil || tree.Children[2].Children == nil {
		t.Errorf("Decode left nil lists: %+v", tree)
	}
	again, err := decode(encode(tree))
	if err != nil {
		t.Fatalf("Decode(Encode(tree)) error: %v", err)
	}
	if diff := cmp.Diff(tree, again); diff != "" {
		t.Errorf("round trip changed the tree (-want +got):\n%s", diff)
	}
}

func TestProblemsNameTheNode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tree *Node
		want []NodeProblem
	}{
		{"valid", internal("root", 0, leaf("1", 1), passed(leaf("2", 2))), nil},
		{"duplicate id", internal("root", 0, leaf("1", 1), leaf("1", 2)), []NodeProblem{prob("1", "id is used by another node")}},
		{"bad id", internal("root", 0, leaf("../x", 1)), []NodeProblem{prob("../x", "invalid id: ids are letters, digits, '.', '_' and '-', start with a letter or digit, and never contain '..'")}},
		{"leaf without goal", internal("root", 0, func() *Node { n := leaf("1", 1); n.Goal = " "; return n }()), []NodeProblem{prob("1", "goal is empty: a leaf needs a goal an agent can work on")}},
		{"attempts over max", internal("root", 0, func() *Node { n := leaf("1", 1); n.Attempts = 4; return n }()), []NodeProblem{prob("1", "attempts 4 exceeds max_attempts 3")}},
		{"zero max attempts", func() *Node { n := leaf("root", 0); n.MaxAttempts = 0; return n }(), []NodeProblem{prob("root", "max_attempts is 0, want at least 1")}},
		{"bad next", func() *Node { n := leaf("root", 0); n.Next = "done"; return n }(), []NodeProblem{prob("root", `next is "done", want execute or decompose`)}},
		{"internal passes without children passing", func() *Node { n := internal("root", 0, leaf("1", 1)); n.Passes = true; return n }(), []NodeProblem{prob("root", "passes is true but not all children pass")}},
		{"internal open with all children passed", func() *Node {
			n := internal("root", 0, passed(leaf("1", 1)))
			n.Passes = false
			return n
		}(), []NodeProblem{prob("root", "passes is false but all children pass")}},
		{"blank acceptance", func() *Node { n := leaf("root", 0); n.Acceptance = []string{"ok", ""}; return n }(), []NodeProblem{prob("root", "acceptance item 2 is empty")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tree.Problems()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Problems() mismatch (-want +got):\n%s", diff)
			}
			if err := tt.tree.Validate(); (err != nil) != (len(tt.want) > 0) || (err != nil && baton.ErrorCode(err) != baton.Invalid) {
				t.Errorf("Validate() = %v, want an Invalid error iff there are problems", err)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, `null`, `[]`, `{"id":"root"} {}`,
		`{"id":"root","title":"t","goal":"g","next":"execute","max_attempts":1,"extra":1}`,
		`{"id":"root","title":"t","goal":"g","next":"execute","max_attempts":1,"children":[null]}`,
		`{"id":"root","title":"t","goal":"g","next":"execute","max_attempts":0}`,
	} {
		if _, err := decode([]byte(in)); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("Decode(%q) = %v, want an Invalid error", in, err)
		}
	}
	deep := `{"id":"n0","title":"t","goal":"g","next":"execute","max_attempts":1,"children":[` + strings.Repeat(`{"id":"n","title":"t","goal":"g","next":"execute","max_attempts":1,"children":[`, 40) + strings.Repeat(`]}`, 41)
	if _, err := decode([]byte(deep)); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Decode(41 levels) = %v, want an Invalid error", err)
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tree  *Node
		state SelectionState
		node  string
	}{
		{"single leaf", leaf("root", 0), open, "root"},
		{"leftmost by order", internal("root", 0, leaf("b", 1), leaf("a", 2)), open, "b"},
		{"ties by id", internal("root", 0, leaf("b", 1), leaf("a", 1)), open, "a"},
		{"skips passed subtrees", internal("root", 0, internal("1", 1, passed(leaf("1.1", 1))), internal("2", 2, passed(leaf("2.1", 1)), leaf("2.2", 2))), open, "2.2"},
		{"stuck leftmost blocks later leaves", internal("root", 0, stuck(leaf("1", 1)), leaf("2", 2)), Stuck, "1"},
		{"complete", internal("root", 0, passed(leaf("1", 1)), passed(leaf("2", 2))), complete, ""},
		{"open decompose leaf", func() *Node { n := leaf("root", 0); n.Next = nextDecompose; return n }(), open, "root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Select(tt.tree)
			id := ""
			if got.Node != nil {
				id = got.Node.ID
			}
			if got.State != tt.state || id != tt.node {
				t.Errorf("Select() = %s %q, want %s %q", got.State, id, tt.state, tt.node)
			}
			if got.Node != nil && (got.Path[0] != tt.tree || got.Path[len(got.Path)-1] != got.Node) {
				t.Errorf("Select() path %v does not run from the root to the node", got.Path)
			}
		})
	}
}

func TestSummaryAndCounts(t *testing.T) {
	t.Parallel()
	tree := internal("root", 0, passed(leaf("1", 1)), internal("2", 2, stuck(leaf("2.1", 1)), leaf("2.2", 2)), leaf("3", 3))
	want := `[ ] root task root
  [x] 1 task 1
  [ ] 2 task 2
    [!] 2.1 task 2.1 (execute, attempts 3/3)  <- selected
    [ ] 2.2 task 2.2 (execute, attempts 0/3)
  [ ] 3 task 3 (execute, attempts 0/3)
`
	if got := Summary(tree, "2.1", 100); got != want {
		t.Errorf("Summary() =\n%s\nwant\n%s", got, want)
	}
	if got := Summary(tree, "", 2); !strings.HasSuffix(got, "... and 4 more nodes (see .agent/context/runner/state/tree.json)\n") || strings.Count(got, "\n") != 3 {
		t.Errorf("Summary(max 2) =\n%s", got)
	}
	if diff := cmp.Diff(Counts{Leaves: 4, Passed: 1, Open: 2, Stuck: 1, Nodes: 6}, Count(tree)); diff != "" {
		t.Errorf("Count() mismatch (-want +got):\n%s", diff)
	}
}

func TestAddNode(t *testing.T) {
	t.Parallel()
	tree := internal("root", 0, passed(leaf("1", 1)), leaf("2", 2))
	after, n, err := AddNode(tree, "root", Node{Title: "third", Goal: "g", MaxAttempts: 2})
	if err != nil {
		t.Fatalf("AddNode error: %v", err)
	}
	if n.ID != "3" || n.Order != 3 || n.Next != nextExecute || len(after.Children) != 3 || len(tree.Children) != 2 {
		t.Errorf("AddNode(root) = node %+v in %d children (before has %d), want id 3, order 3, execute", n, len(after.Children), len(tree.Children))
	}
	after, n, err = AddNode(after, "2", Node{Title: "sub", Goal: "g", MaxAttempts: 2, Passes: true, Attempts: 2})
	if err != nil || n.ID != "2.1" || n.Passes || n.Attempts != 0 {
		t.Errorf("AddNode(2) = %+v, %v; want id 2.1 with runner-owned fields reset", n, err)
	}
	if _, _, err := AddNode(after, "1", Node{Title: "x", Goal: "g", MaxAttempts: 1}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("AddNode under a passed node = %v, want Conflict", err)
	}
	if _, _, err := AddNode(after, "nope", Node{Title: "x", Goal: "g", MaxAttempts: 1}); baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("AddNode under a missing node = %v, want NotFound", err)
	}
	if _, _, err := AddNode(after, "root", Node{ID: "2.1", Title: "x", Goal: "g", MaxAttempts: 1}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("AddNode with a used id = %v, want Conflict", err)
	}
	if _, _, err := AddNode(after, "root", Node{Title: "x", MaxAttempts: 1}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("AddNode of a leaf without goal = %v, want Invalid", err)
	}
}

func TestCheckTreeUpdate(t *testing.T) {
	t.Parallel()
	before := internal("root", 0, internal("1", 1, passed(leaf("1.1", 1))), leaf("2", 2))
	tests := []struct {
		name   string
		change func(t *Node)
		ok     bool
	}{
		{"open node edited", func(t *Node) { t.Find("2").Title = "new" }, true},
		{"passed node edited", func(t *Node) { t.Find("1.1").Goal = "other" }, false},
		{"passed parent's child added", func(t *Node) { p := t.Find("1"); p.Children = append(p.Children, leaf("1.2", 2)) }, false},
		{"passed node removed", func(t *Node) { t.Children = t.Children[1:] }, false},
		{"passed node moved", func(t *Node) {
			n := t.Find("1")
			t.Children = t.Children[1:]
			t.Find("2").Children = []*Node{n}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := before.Clone()
			tt.change(after)
			err := checkTreeUpdate(before, after)
			if (err == nil) != tt.ok {
				t.Errorf("CheckTreeUpdate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func FuzzDecodeTree(f *testing.F) {
	f.Add([]byte(`{"id":"root","order":0,"title":"R","goal":"g","acceptance":["a"],"next":"decompose","passes":false,"attempts":0,"max_attempts":3,"children":[{"id":"1","order":1,"title":"A","goal":"g","acceptance":[],"next":"execute","passes":true,"attempts":0,"max_attempts":3,"children":[]}]}`))
	f.Add(encode(internal("root", 0, passed(leaf("1", 1)), internal("2", 2, leaf("2.1", 1)))))
	f.Add([]byte(`{"id":"root","children":[{"id":"root"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := decode(data)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("Decode error %v is not Invalid", err)
			}
			return
		}
		if ps := tree.Problems(); len(ps) > 0 {
			t.Fatalf("Decode accepted a tree with problems %v", ps)
		}
		again, err := decode(encode(tree))
		if err != nil {
			t.Fatalf("Decode(Encode(tree)) error: %v", err)
		}
		if diff := cmp.Diff(tree, again); diff != "" {
			t.Fatalf("round trip changed the tree (-want +got):\n%s", diff)
		}
		sel := Select(tree)
		if sel.State == open && (sel.Node == nil || !sel.Node.IsLeaf() || sel.Node.Passes || sel.Node.Stuck()) {
			t.Fatalf("Select() = %+v, not an open leaf", sel)
		}
		_ = Summary(tree, "", 5)
	})
}
