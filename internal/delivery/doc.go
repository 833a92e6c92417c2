// Package delivery is the delivery pipeline: it carries a request (a
// GitHub issue, or a summary for a local repository) to a merged change
// through the phases plan, implement, review, verify, deploy and observe.
//
// The pieces, from the inside out:
//
//   - Apply is the state machine: pure, one method per action, so the
//     CLI, the HTTP server, the MCP server and the workers all move a
//     delivery the same way.
//   - BuildPrompt and SystemPrompt give every agent phase the same prompt:
//     the summary and the refs' URLs. Context accumulates as refs.
//   - Service is the core every edge calls: Create (from a Request),
//     Act and Reject (people's actions), List and Get (reads), Reconcile
//     (recovering phases whose worker died). Each change, its phase log
//     and the job it causes commit in one transaction.
//   - Runner claims a pending phase and runs it: agents through agentrun
//     in a worktree, verify/deploy/observe through the forge and the
//     delivery's commands, with heartbeats and cancellation.
//   - Worker runs queued phases until stopped, on the queue in
//     internal/queue (River).
//
// Deliveries are stored by internal/sqlstore (SQLite or PostgreSQL);
// where work lands is internal/forge (a local repository or GitHub).
package delivery
