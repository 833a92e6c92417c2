package goaltree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// maxTreeBytes bounds a tree file; a goal tree is kilobytes.
const maxTreeBytes = 16 << 20

// decode parses a tree file strictly (no unknown fields, nothing after the
// root object), fills nil lists with empty ones, sorts children by (order,
// id) and validates the result. Errors are Invalid and name the problem
// nodes.
func decode(data []byte) (*Node, error) {
	if len(data) > maxTreeBytes {
		return nil, baton.Errorf(baton.Invalid, "tree file is %d bytes, more than the %d allowed", len(data), maxTreeBytes)
	}
	root, err := decodeTree(data)
	if err != nil {
		return nil, err
	}
	if err := root.Validate(); err != nil {
		return nil, err
	}
	return root, nil
}

// decodeTree parses and normalises without validating, for reporting
// every problem of a tree (run validate) or comparing an edited one.
func decodeTree(data []byte) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var root *Node
	if err := dec.Decode(&root); err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "tree is not valid JSON for a goal tree")
	}
	if dec.More() {
		return nil, baton.Errorf(baton.Invalid, "tree has data after the root object")
	}
	if root == nil {
		return nil, baton.Errorf(baton.Invalid, "tree is null: want the root node object")
	}
	if err := normalize(root, 0); err != nil {
		return nil, err
	}
	return root, nil
}

// normalize replaces nil lists and nil children, and sorts children.
func normalize(n *Node, depth int) error {
	if depth > maxTreeDepth {
		return baton.Errorf(baton.Invalid, "tree is nested deeper than %d levels", maxTreeDepth)
	}
	if n.Acceptance == nil {
		n.Acceptance = []string{}
	}
	if n.Children == nil {
		n.Children = []*Node{}
	}
	for _, c := range n.Children {
		if c == nil {
			return baton.Errorf(baton.Invalid, "node %s has a null child", n.ID)
		}
		if err := normalize(c, depth+1); err != nil {
			return err
		}
	}
	sortChildren(n)
	return nil
}

// sortChildren orders n's children by (order, id), not recursively.
func sortChildren(n *Node) {
	slices.SortStableFunc(n.Children, func(a, b *Node) int {
		if a.Order != b.Order {
			if a.Order < b.Order {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// encode renders a tree canonically: indented JSON, children in order, a
// final newline. Decode(encode(t)) equals t.
func encode(root *Node) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic(fmt.Sprintf("goaltree: encode tree: %v", err)) // a Node always marshals
	}
	return buf.Bytes()
}

// SelectionState says what the runner should do next.
type SelectionState string

const (
	open     SelectionState = "open"     // Node is the leaf to work on
	complete SelectionState = "complete" // every leaf passed
	Stuck    SelectionState = "stuck"    // Node is out of attempts
)

// Selection is the outcome of Select.
type Selection struct {
	State SelectionState
	Node  *Node   // nil when complete
	Path  []*Node // root to Node, both included
}

// Select picks the leftmost open leaf: depth first, children in (order, id)
// order, skipping passed subtrees. When that leaf has used all its
// attempts the run is stuck: the runner works strictly in order, because
// later tasks may build on earlier ones.
func Select(root *Node) Selection {
	if root.Passes {
		return Selection{State: complete}
	}
	path := []*Node{root}
	n := root
	for !n.IsLeaf() {
		next := firstOpen(n)
		if next == nil {
			// Unreachable in a valid tree: internal nodes pass iff all
			// children do.
			return Selection{State: complete}
		}
		n = next
		path = append(path, n)
	}
	if n.Stuck() {
		return Selection{State: Stuck, Node: n, Path: path}
	}
	return Selection{State: open, Node: n, Path: path}
}

func firstOpen(n *Node) *Node {
	kids := slices.Clone(n.Children)
	sortChildren(&Node{Children: kids})
	for _, c := range kids {
		if !c.Passes {
			return c
		}
	}
	return nil
}

// Counts tallies a tree's leaves.
type Counts struct {
	Leaves int `json:"leaves"`
	Passed int `json:"passed"`
	Open   int `json:"open"`  // not passed and not stuck
	Stuck  int `json:"stuck"` // not passed, out of attempts
	Nodes  int `json:"nodes"`
}

// Count tallies root's tree.
func Count(root *Node) Counts {
	var c Counts
	root.Walk(func(n, _ *Node, _ int) bool {
		c.Nodes++
		if !n.IsLeaf() {
			return true
		}
		c.Leaves++
		switch {
		case n.Passes:
			c.Passed++
		case n.Stuck():
			c.Stuck++
		default:
			c.Open++
		}
		return true
	})
	return c
}

// mark is a node's one-glyph state in listings: [x] passed, [!] stuck,
// [ ] open.
func mark(n *Node) string {
	switch {
	case n.Passes:
		return "[x]"
	case n.Stuck():
		return "[!]"
	}
	return "[ ]"
}

// DefaultSummaryNodes caps the tree summary in prompts.
const DefaultSummaryNodes = 200

// Summary renders one line per node, indented by depth: mark, id, title,
// and attempts or the next action. The selected node is flagged. After
// maxNodes lines it says how many nodes it left out.
func Summary(root *Node, selected string, maxNodes int) string {
	var b strings.Builder
	shown, total := 0, 0
	root.Walk(func(n, _ *Node, depth int) bool {
		total++
		if shown >= maxNodes {
			return true
		}
		shown++
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(mark(n))
		b.WriteByte(' ')
		b.WriteString(n.ID)
		b.WriteByte(' ')
		b.WriteString(oneLine(n.Title))
		if n.IsLeaf() && !n.Passes {
			fmt.Fprintf(&b, " (%s, attempts %d/%d)", n.Next, n.Attempts, n.MaxAttempts)
		}
		if n.ID == selected {
			b.WriteString("  <- selected")
		}
		b.WriteByte('\n')
		return true
	})
	if total > shown {
		fmt.Fprintf(&b, "... and %d more nodes (see %s/%s/%s)\n", total-shown, dir, stateDir, treeFile)
	}
	return b.String()
}

// oneLine folds a title onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// childID returns the id for a new child of parent: "<n>" under the root,
// "<parent>.<n>" deeper, with n one more than the largest number a sibling
// id ends in, and never an id the tree already uses.
func childID(root, parent *Node) string {
	prefix := parent.ID + "."
	if parent == root {
		prefix = ""
	}
	n := 0
	for _, c := range parent.Children {
		if k, err := strconv.Atoi(strings.TrimPrefix(c.ID, prefix)); err == nil && k > n {
			n = k
		}
	}
	for {
		n++
		id := prefix + strconv.Itoa(n)
		if root.Find(id) == nil {
			return id
		}
	}
}

// nextOrder returns an order after every child of parent.
func nextOrder(parent *Node) int {
	o := 0
	for _, c := range parent.Children {
		o = max(o, c.Order)
	}
	return o + 1
}

// recomputePasses sets every internal node's passes from its children,
// bottom up.
func recomputePasses(n *Node) bool {
	if n.IsLeaf() {
		return n.Passes
	}
	all := true
	for _, c := range n.Children {
		all = recomputePasses(c) && all
	}
	n.Passes = all
	return all
}

// AddNode adds child under the node parentID of root, as `baton run add`
// does: the runner assigns the id unless child.ID is set, the order
// unless child.Order is set, and resets the runner-owned fields. It
// refuses a passed parent (passed nodes are immutable) and returns the
// new tree, validated.
func AddNode(root *Node, parentID string, child Node) (*Node, *Node, error) {
	after := root.Clone()
	parent := after.Find(parentID)
	if parent == nil {
		return nil, nil, baton.Errorf(baton.NotFound, "no node %q in the tree: see baton run tree", parentID)
	}
	if parent.Passes {
		return nil, nil, baton.Errorf(baton.Conflict, "node %s has passed and passed nodes are immutable: add the node under an open one", parentID)
	}
	c := child
	if c.ID == "" {
		c.ID = childID(after, parent)
	} else if err := baton.CheckID("node", c.ID); err != nil {
		return nil, nil, err
	} else if after.Find(c.ID) != nil {
		return nil, nil, baton.Errorf(baton.Conflict, "node id %q is already used", c.ID)
	}
	if c.Order == 0 {
		c.Order = nextOrder(parent)
	}
	if c.Next == "" {
		c.Next = nextExecute
	}
	if c.Acceptance == nil {
		c.Acceptance = []string{}
	}
	c.Passes, c.Attempts, c.Children = false, 0, []*Node{}
	parent.Children = append(parent.Children, &c)
	sortChildren(parent)
	recomputePasses(after)
	if err := after.Validate(); err != nil {
		return nil, nil, err
	}
	return after, after.Find(c.ID), nil
}
