// Package goaltree is baton's goal-tree runner: it loops fresh agent
// sessions over a tree of tasks, one leaf at a time, and trusts neither
// signal alone. A leaf passes only when the agent says done AND the guard
// command passes.
//
// The pure parts take no I/O: decoding and validating trees (Decode,
// Select, Summary), decoding the agent's result (DecodeResult), checking
// it against the selected node (CheckResult) and computing the next tree
// (Update), which is a function of the tree before, the agent's result and
// the guard's verdict. Runner-owned fields (ids, passes, attempts,
// max_attempts) come from the tree before, so an agent cannot change them.
//
// Runner.Step wires one iteration: git safety, selection, the ephemeral
// context files, the prompt pack, the agent (package agentrun), the guard,
// the state update, the iteration's logs and its commit. Failures are
// classified as in baton's design:
//
//	class         examples                                   attempt  fed back  log
//	runner error  timeout, unparsable output, agent CLI      no       never     runner_error.log
//	              failed, guard could not start, git failure
//	agent error   edited tree.json, children on the wrong    yes      history   agent_error.log
//	              node, done/retry with children, too many
//	              children
//	retry         the agent answered retry                   yes      history
//	guard failure done, and the guard failed                 yes      failure   guard.log
//	pass          done, and the guard passed                 no       -
//
// Everything lives under .agent/context/runner/ (see Layout); docs/runner.md
// is the user's guide.
package goaltree
