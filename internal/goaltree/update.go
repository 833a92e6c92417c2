package goaltree

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/baton-agent/baton"
)

// Verdict is what one agent-attributed iteration comes to.
type Verdict struct {
	// Status is the agent's status, or agent_error when the runner
	// rejected what the agent did.
	Status StepStatus
	Guard  GuardResult
	// Passed is true when the node passed: done and a passing guard.
	Passed bool
	// AttemptSpent is true for retry, guard failure and agent error.
	AttemptSpent bool
	// AgentError says what the runner rejected, for history and
	// agent_error.log.
	AgentError string
	// Added lists the ids of the children a decomposition attached.
	Added []string
}

// update computes the tree after one agent-attributed iteration on node
// id. It is a function of the tree before, the agent's result, the
// runner's rejection of it (agentErr, "" when accepted) and the guard's
// verdict; the tree an agent may have written to disk is no input, so
// runner-owned fields always come from before.
//
//	agentErr set        attempt spent (saturating at max_attempts)
//	done + guard pass   the node passes; ancestors whose children all pass, too
//	done + guard fail   attempt spent
//	retry               attempt spent
//	decomposed          children attached with runner-assigned ids and order
//
// It returns an Internal error if the result would break an invariant,
// which means a bug in the runner, not in the agent.
func update(before *Node, id string, r *Result, agentErr string, guard GuardResult, lim Limits) (*Node, Verdict, error) {
	after := before.Clone()
	n := after.Find(id)
	if n == nil || !n.IsLeaf() || n.Passes {
		return nil, Verdict{}, baton.Errorf(baton.Internal, "node %s is not an open leaf of the tree", id)
	}
	v := Verdict{Status: r.Status, Guard: guard}
	if agentErr != "" {
		v.Status, v.AgentError = statusAgentError, agentErr
	}
	if v.Status != statusDone {
		v.Guard = guardSkipped
	}
	switch v.Status {
	case statusDone:
		if v.Guard == guardPass {
			n.Passes, v.Passed = true, true
		} else {
			v.Guard = guardFail
			v.AttemptSpent = true
		}
	case statusRetry, statusAgentError:
		v.AttemptSpent = true
	case statusDecomposed:
		for i, c := range r.Children {
			child := &Node{
				ID:          childID(after, n),
				Order:       i + 1,
				Title:       strings.TrimSpace(c.Title),
				Goal:        strings.TrimSpace(c.Goal),
				Acceptance:  trimAll(c.Acceptance),
				Next:        c.Next,
				MaxAttempts: lim.MaxAttempts,
				Children:    []*Node{},
			}
			n.Children = append(n.Children, child)
			v.Added = append(v.Added, child.ID)
		}
	default:
		return nil, Verdict{}, baton.Errorf(baton.Internal, "status %q cannot update a tree", v.Status)
	}
	if v.AttemptSpent {
		n.Attempts = min(n.Attempts+1, n.MaxAttempts)
	}
	recomputePasses(after)
	if err := after.Validate(); err != nil {
		return nil, Verdict{}, baton.WrapError(baton.Internal, err, "update of node %s broke the tree", id)
	}
	if err := checkTreeUpdate(before, after); err != nil {
		return nil, Verdict{}, baton.WrapError(baton.Internal, err, "update of node %s changed a passed node", id)
	}
	return after, v, nil
}

func trimAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// describeTreeEdit explains how an agent changed tree.json on disk, for
// the agent error that costs it the attempt. edited is the file's content
// after the agent ran; before is the tree the runner wrote.
func describeTreeEdit(before *Node, edited []byte) string {
	const owned = "tree.json belongs to the runner and your edits were reverted; report children in your answer instead"
	after, err := decodeTree(edited)
	if err != nil {
		return "you changed tree.json into something that is not a goal tree; " + owned
	}
	if err := checkTreeUpdate(before, after); err != nil {
		return "you changed tree.json: " + baton.ErrorMessage(err) + "; " + owned
	}
	var changes []string
	index := map[string]*Node{}
	after.Walk(func(n, _ *Node, _ int) bool { index[n.ID] = n; return true })
	before.Walk(func(n, _ *Node, _ int) bool {
		got, ok := index[n.ID]
		switch {
		case !ok:
			changes = append(changes, "removed node "+n.ID)
		case got.Passes != n.Passes || got.Attempts != n.Attempts || got.MaxAttempts != n.MaxAttempts:
			changes = append(changes, "changed the runner-owned fields of node "+n.ID)
		case !sameFields(n, got):
			changes = append(changes, "edited node "+n.ID)
		}
		delete(index, n.ID)
		return true
	})
	for _, id := range slices.Sorted(maps.Keys(index)) {
		changes = append(changes, "added node "+id)
	}
	if len(changes) == 0 {
		return "you rewrote tree.json; " + owned
	}
	if len(changes) > 5 {
		changes = append(changes[:5], fmt.Sprintf("and %d more changes", len(changes)-5))
	}
	return "you changed tree.json (" + strings.Join(changes, ", ") + "); " + owned
}

// sameFields compares the agent-visible fields of two nodes, not their
// children.
func sameFields(a, b *Node) bool {
	if a.Title != b.Title || a.Goal != b.Goal || a.Next != b.Next || a.Order != b.Order || len(a.Acceptance) != len(b.Acceptance) {
		return false
	}
	for i := range a.Acceptance {
		if a.Acceptance[i] != b.Acceptance[i] {
			return false
		}
	}
	return true
}
