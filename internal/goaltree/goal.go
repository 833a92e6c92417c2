package goaltree

import (
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// NodeNext says what the goal-tree runner does with an open leaf.
type NodeNext string

const (
	// nextExecute asks an agent to do the node's work.
	nextExecute NodeNext = "execute"
	// nextDecompose asks an agent to split the node into children.
	nextDecompose NodeNext = "decompose"
)

// Valid reports whether n is execute or decompose.
func (n NodeNext) Valid() bool { return n == nextExecute || n == nextDecompose }

// Node is one task of a goal tree; the tree is its root node. A node with
// children is internal: it passes when all of them pass. A leaf passes only
// when an agent said done and the guard passed.
//
// ID, Passes, Attempts and MaxAttempts are runner-owned: only the runner
// changes them, never an agent. Attempts counts failed attempts (retry,
// guard failure, agent error); a pass spends none.
type Node struct {
	ID          string   `json:"id"`
	Order       int      `json:"order"`
	Title       string   `json:"title"`
	Goal        string   `json:"goal"`
	Acceptance  []string `json:"acceptance"`
	Next        NodeNext `json:"next"`
	Passes      bool     `json:"passes"`
	Attempts    int      `json:"attempts"`
	MaxAttempts int      `json:"max_attempts"`
	Children    []*Node  `json:"children"`
}

// maxTreeDepth bounds how deep a goal tree may nest (the root is depth 0).
// It keeps recursion sane whatever a tree file holds.
const maxTreeDepth = 32

// IsLeaf reports whether n has no children.
func (n *Node) IsLeaf() bool { return len(n.Children) == 0 }

// Stuck reports whether n is an open leaf that has used all its attempts.
func (n *Node) Stuck() bool { return n.IsLeaf() && !n.Passes && n.Attempts >= n.MaxAttempts }

// Walk calls fn for n and its descendants, depth first, children in slice
// order, with each node's parent (nil for n) and depth (0 for n). It stops
// descending below a node for which fn returns false.
func (n *Node) Walk(fn func(node, parent *Node, depth int) bool) {
	var walk func(node, parent *Node, depth int)
	walk = func(node, parent *Node, depth int) {
		if !fn(node, parent, depth) {
			return
		}
		for _, c := range node.Children {
			walk(c, node, depth+1)
		}
	}
	walk(n, nil, 0)
}

// Find returns the node with id in n's tree, or nil.
func (n *Node) Find(id string) *Node {
	var found *Node
	n.Walk(func(node, _ *Node, _ int) bool {
		if node.ID == id {
			found = node
		}
		return found == nil
	})
	return found
}

// Path returns the nodes from n down to the node with id, both included,
// or nil when id is not in the tree.
func (n *Node) Path(id string) []*Node {
	if n.ID == id {
		return []*Node{n}
	}
	for _, c := range n.Children {
		if p := c.Path(id); p != nil {
			return append([]*Node{n}, p...)
		}
	}
	return nil
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	c := *n
	c.Acceptance = append([]string(nil), n.Acceptance...)
	c.Children = make([]*Node, len(n.Children))
	for i, ch := range n.Children {
		c.Children[i] = ch.Clone()
	}
	return &c
}

// NodeProblem is one broken invariant, naming the node it is about.
type NodeProblem struct {
	NodeID  string `json:"node_id"`
	Message string `json:"message"`
}

func (p NodeProblem) String() string { return "node " + p.NodeID + ": " + p.Message }

// Problems lists every broken invariant of the tree rooted at n:
//
//   - ids are valid (CheckID) and unique in the tree;
//   - every node has a title; every leaf has a goal; acceptance items are
//     not blank; next is execute or decompose;
//   - max_attempts >= 1 and 0 <= attempts <= max_attempts;
//   - an internal node passes if and only if all its children pass;
//   - the tree is at most MaxTreeDepth deep.
//
// "Passed nodes are immutable" relates two trees: see CheckTreeUpdate.
func (n *Node) Problems() []NodeProblem {
	var ps []NodeProblem
	seen := map[string]bool{}
	n.Walk(func(node, _ *Node, depth int) bool {
		id := node.ID
		add := func(format string, args ...any) {
			ps = append(ps, NodeProblem{NodeID: id, Message: fmt.Sprintf(format, args...)})
		}
		switch {
		case !baton.ValidID(id):
			if id == "" {
				id = "(no id)"
			}
			add("invalid id: ids are letters, digits, '.', '_' and '-', start with a letter or digit, and never contain '..'")
		case seen[id]:
			add("id is used by another node")
		}
		seen[node.ID] = true
		if strings.TrimSpace(node.Title) == "" {
			add("title is empty")
		}
		if node.IsLeaf() && strings.TrimSpace(node.Goal) == "" {
			add("goal is empty: a leaf needs a goal an agent can work on")
		}
		for i, a := range node.Acceptance {
			if strings.TrimSpace(a) == "" {
				add("acceptance item %d is empty", i+1)
			}
		}
		if !node.Next.Valid() {
			add("next is %q, want execute or decompose", node.Next)
		}
		if node.MaxAttempts < 1 {
			add("max_attempts is %d, want at least 1", node.MaxAttempts)
		}
		if node.Attempts < 0 {
			add("attempts is %d, want 0 or more", node.Attempts)
		} else if node.MaxAttempts >= 1 && node.Attempts > node.MaxAttempts {
			add("attempts %d exceeds max_attempts %d", node.Attempts, node.MaxAttempts)
		}
		if !node.IsLeaf() {
			all := true
			for _, c := range node.Children {
				all = all && c.Passes
			}
			if node.Passes != all {
				if node.Passes {
					add("passes is true but not all children pass")
				} else {
					add("passes is false but all children pass")
				}
			}
		}
		if depth >= maxTreeDepth && !node.IsLeaf() {
			add("the tree is nested deeper than %d levels", maxTreeDepth)
			return false
		}
		return true
	})
	return ps
}

// Validate returns an Invalid error listing the tree's problems (up to
// five), or nil.
func (n *Node) Validate() error {
	return problemsError("goal tree is invalid", n.Problems())
}

func problemsError(what string, ps []NodeProblem) error {
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, 0, 5)
	for i, p := range ps {
		if i == 5 {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(ps)-5))
			break
		}
		msgs = append(msgs, p.String())
	}
	return baton.Errorf(baton.Invalid, "%s: %s", what, strings.Join(msgs, "; "))
}

// checkTreeUpdate enforces what holds between a tree and its successor:
// a node that passed in before is still in after, under the same parent,
// with the same fields and, for an internal node, the same children. It
// returns an Invalid error naming each changed node, or nil.
func checkTreeUpdate(before, after *Node) error {
	type place struct {
		node   *Node
		parent string
	}
	index := map[string]place{}
	after.Walk(func(node, parent *Node, _ int) bool {
		p := ""
		if parent != nil {
			p = parent.ID
		}
		index[node.ID] = place{node, p}
		return true
	})
	var ps []NodeProblem
	before.Walk(func(node, parent *Node, _ int) bool {
		if !node.Passes {
			return true
		}
		add := func(msg string) { ps = append(ps, NodeProblem{NodeID: node.ID, Message: msg}) }
		got, ok := index[node.ID]
		switch {
		case !ok:
			add("passed node is missing")
		case parent != nil && got.parent != parent.ID, parent == nil && got.parent != "":
			add("passed node moved to another parent")
		case !sameNode(node, got.node):
			add("passed node changed")
		}
		return false // its descendants passed too and are covered by sameNode
	})
	return problemsError("passed nodes are immutable", ps)
}

// sameNode reports whether a and b are equal, children included.
func sameNode(a, b *Node) bool {
	if a.ID != b.ID || a.Order != b.Order || a.Title != b.Title || a.Goal != b.Goal ||
		a.Next != b.Next || a.Passes != b.Passes || a.Attempts != b.Attempts ||
		a.MaxAttempts != b.MaxAttempts || len(a.Acceptance) != len(b.Acceptance) ||
		len(a.Children) != len(b.Children) {
		return false
	}
	for i := range a.Acceptance {
		if a.Acceptance[i] != b.Acceptance[i] {
			return false
		}
	}
	for i := range a.Children {
		if !sameNode(a.Children[i], b.Children[i]) {
			return false
		}
	}
	return true
}

// StepStatus is the outcome of one runner iteration. The agent reports
// done, retry or decomposed; the runner records agent_error when it rejects
// what the agent did and runner_error when the iteration failed for reasons
// that are not the agent's.
type StepStatus string

const (
	statusDone        StepStatus = "done"
	statusRetry       StepStatus = "retry"
	statusDecomposed  StepStatus = "decomposed"
	statusAgentError  StepStatus = "agent_error"
	statusRunnerError StepStatus = "runner_error"
)

// AgentReported reports whether s is one of the statuses an agent may
// answer with.
func (s StepStatus) AgentReported() bool {
	return s == statusDone || s == statusRetry || s == statusDecomposed
}

// GuardResult is what the guard command said. It runs only after done.
type GuardResult string

const (
	guardPass    GuardResult = "pass"
	guardFail    GuardResult = "fail"
	guardSkipped GuardResult = "skipped"
)

// RunState is the goal-tree runner's memory between iterations,
// .agent/context/runner/state/run_state.json. Together with the tree it is
// everything a fresh process needs to go on.
type RunState struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	// Branch is the branch the run works on; steps refuse any other. Empty
	// means any branch that is not main or master.
	Branch    string    `json:"branch,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// NextIter is the number the next iteration gets, from 1.
	NextIter int `json:"next_iter"`
	// Feedback is what the next attempt at Feedback.Node is told about the
	// previous one. Runner errors never change it.
	Feedback *Feedback `json:"feedback,omitempty"`
	// Last is the last iteration recorded, whatever its outcome.
	Last *IterationRecord `json:"last,omitempty"`
	// InFlight is set while an iteration runs. A step that finds it set
	// knows the process running that iteration died.
	InFlight *InFlight `json:"in_flight,omitempty"`
	Totals   RunTotals `json:"totals"`
}

// runStateVersion is the run_state.json layout baton writes.
const runStateVersion = 1

// Feedback is the agent-attributed outcome of the last iteration: the
// seed's last_status, last_summary and last_guard, tied to a node and an
// iteration.
type Feedback struct {
	Iter    int         `json:"iter"`
	Node    string      `json:"node"`
	Status  StepStatus  `json:"status"`
	Guard   GuardResult `json:"guard"`
	Summary string      `json:"summary,omitempty"`
}

// History reports whether the next attempt at the node gets a history
// (the last summary): after a retry or an agent error.
func (f *Feedback) History() bool {
	return f != nil && (f.Status == statusRetry || f.Status == statusAgentError)
}

// Failure reports whether the next attempt gets the guard's failure: after
// done and a failed guard.
func (f *Feedback) Failure() bool {
	return f != nil && f.Status == statusDone && f.Guard == guardFail
}

// IterationRecord is one iteration's outcome, as committed.
type IterationRecord struct {
	Iter    int         `json:"iter"`
	Node    string      `json:"node"`
	Status  StepStatus  `json:"status"`
	Guard   GuardResult `json:"guard"`
	Attempt int         `json:"attempt"`
	// Error is the runner or agent error, when there was one.
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
}

// InFlight marks an iteration that started and has not been recorded.
type InFlight struct {
	Iter      int       `json:"iter"`
	Node      string    `json:"node"`
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at"`
	// Head is the commit HEAD pointed at when the iteration started.
	Head string `json:"head,omitempty"`
}

// RunTotals add up a run's iterations and what its agents reported.
type RunTotals struct {
	Iterations   int     `json:"iterations"`
	AgentSeconds float64 `json:"agent_seconds"`
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
}

// Validate checks a run state: a valid run id, a positive next_iter, and
// records that name valid nodes with known statuses.
func (s *RunState) Validate() error {
	if err := baton.CheckID("run", s.RunID); err != nil {
		return err
	}
	if s.NextIter < 1 {
		return baton.Errorf(baton.Invalid, "run %s: next_iter is %d, want 1 or more", s.RunID, s.NextIter)
	}
	if f := s.Feedback; f != nil {
		if !baton.ValidID(f.Node) || (!f.Status.AgentReported() && f.Status != statusAgentError) {
			return baton.Errorf(baton.Invalid, "run %s: feedback names node %q with status %q", s.RunID, f.Node, f.Status)
		}
	}
	if f := s.InFlight; f != nil && (!baton.ValidID(f.Node) || f.Iter != s.NextIter) {
		return baton.Errorf(baton.Invalid, "run %s: in_flight names node %q, iteration %d", s.RunID, f.Node, f.Iter)
	}
	return nil
}
