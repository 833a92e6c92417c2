package goaltree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/baton-agent/baton"
)

// Result is the structured answer an agent ends its session with.
type Result struct {
	Status   StepStatus  `json:"status"`
	Summary  string      `json:"summary"`
	Children []ChildSpec `json:"children"`
}

// ChildSpec is a child an agent proposes for a decompose node. The runner
// assigns its id, order and runner-owned fields.
type ChildSpec struct {
	Title      string   `json:"title"`
	Goal       string   `json:"goal"`
	Acceptance []string `json:"acceptance"`
	Next       NodeNext `json:"next"`
}

// Limits on what an agent's result may hold.
const (
	maxSummaryBytes = 8 << 10
	maxTitleBytes   = 200
	maxGoalBytes    = 8 << 10
	maxResultBytes  = 1 << 20
)

// decodeResult parses the agent's final JSON strictly: an object with a
// status of done, retry or decomposed, a string summary, and children
// that are null, absent or a list of child objects; no other fields.
// Errors are Invalid: the output is unparsable, which is a runner error,
// never the agent's attempt.
func decodeResult(data []byte) (*Result, error) {
	if len(data) > maxResultBytes {
		return nil, baton.Errorf(baton.Invalid, "agent result is %d bytes, more than the %d allowed", len(data), maxResultBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r *Result
	if err := dec.Decode(&r); err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "agent result is not the expected JSON object")
	}
	if dec.More() {
		return nil, baton.Errorf(baton.Invalid, "agent result has data after the JSON object")
	}
	if r == nil {
		return nil, baton.Errorf(baton.Invalid, "agent result is null")
	}
	if !r.Status.AgentReported() {
		return nil, baton.Errorf(baton.Invalid, "agent result status is %q, want done, retry or decomposed", r.Status)
	}
	return r, nil
}

// childProperties is the schema of one child: what ChildSpec holds.
const childProperties = `{
        "type": "object",
        "properties": {
          "title": {"type": "string", "description": "a short name for the task"},
          "goal": {"type": "string", "description": "what the task must achieve, self-contained"},
          "acceptance": {"type": "array", "items": {"type": "string"}, "description": "checkable criteria"},
          "next": {"type": "string", "enum": ["execute", "decompose"]}
        },
        "required": ["title", "goal", "acceptance", "next"],
        "additionalProperties": false
      }`

// schema returns the JSON schema of the agent's result, given to the agent
// CLI (claude --json-schema, codex --output-schema) and checked by
// agentrun. Children may be null, as the output contract asks of every
// answer but a decomposition. With strict set every property is required,
// as OpenAI's strict structured outputs demand (codex); without it
// children may also be left out, which suits hand-written command agents.
// Semantic rules (children only when decomposing, caps) are checked by
// CheckResult, so breaking them is the agent's error, not unparsable
// output.
func schema(strict bool) []byte {
	required := `["status", "summary"]`
	if strict {
		required = `["status", "summary", "children"]`
	}
	children := `"children": {"type": ["array", "null"], "items": ` + childProperties + `}`
	return []byte(`{
  "type": "object",
  "properties": {
    "status": {"type": "string", "enum": ["done", "retry", "decomposed"]},
    "summary": {"type": "string", "description": "what you did and what is left, for the next session"},
    ` + children + `
  },
  "required": ` + required + `,
  "additionalProperties": false
}
`)
}

// Limits bound what a decomposition may add.
type Limits struct {
	// MaxChildren caps the children of one decomposition.
	MaxChildren int
	// MaxDepth is the deepest a node may sit (the root is 0); children at
	// MaxDepth must be execute nodes.
	MaxDepth int
	// MaxAttempts is given to new children.
	MaxAttempts int
}

// checkResult checks an agent's result against the node it worked on, at
// depth in the tree. A non-empty return is the agent's error, in words the
// next session can act on; it spends an attempt.
func checkResult(node *Node, depth int, r *Result, lim Limits) string {
	switch node.Next {
	case nextExecute:
		switch r.Status {
		case statusDecomposed:
			return fmt.Sprintf("node %s is an execute node: do its work and answer done or retry; decomposed is only for decompose nodes", node.ID)
		case statusDone, statusRetry:
			if len(r.Children) > 0 {
				return fmt.Sprintf("a %s answer must not carry children (got %d): only a decompose node gets children", r.Status, len(r.Children))
			}
		}
	case nextDecompose:
		switch r.Status {
		case statusDone:
			return fmt.Sprintf("node %s is a decompose node: answer decomposed with its children, or retry", node.ID)
		case statusRetry:
			if len(r.Children) > 0 {
				return fmt.Sprintf("a retry answer must not carry children (got %d): answer decomposed to add them", len(r.Children))
			}
		case statusDecomposed:
			return checkChildren(depth, r.Children, lim)
		}
	}
	return ""
}

func checkChildren(depth int, kids []ChildSpec, lim Limits) string {
	switch {
	case len(kids) == 0:
		return "decomposed needs at least one child"
	case len(kids) > lim.MaxChildren:
		return fmt.Sprintf("%d children is over-decomposition (at most %d): size each child for one focused session of about 30 minutes, and do not split implementing, testing and formatting into separate nodes", len(kids), lim.MaxChildren)
	}
	var problems []string
	seen := map[string]bool{}
	for i, c := range kids {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("child %d: ", i+1)+fmt.Sprintf(format, args...))
		}
		title := strings.TrimSpace(c.Title)
		switch {
		case title == "":
			bad("title is empty")
		case len(title) > maxTitleBytes || strings.ContainsAny(title, "\r\n"):
			bad("title must be one line of at most %d bytes", maxTitleBytes)
		case seen[strings.ToLower(title)]:
			bad("title %q repeats another child's", title)
		}
		seen[strings.ToLower(title)] = true
		if strings.TrimSpace(c.Goal) == "" {
			bad("goal is empty")
		} else if len(c.Goal) > maxGoalBytes {
			bad("goal is longer than %d bytes", maxGoalBytes)
		}
		if len(c.Acceptance) == 0 {
			bad("needs at least one acceptance criterion")
		}
		for j, a := range c.Acceptance {
			if strings.TrimSpace(a) == "" {
				bad("acceptance item %d is empty", j+1)
			}
		}
		switch {
		case !c.Next.Valid():
			bad("next is %q, want execute or decompose", c.Next)
		case c.Next == nextDecompose && depth+1 >= lim.MaxDepth:
			bad("next must be execute: the tree may not grow deeper than %d levels", lim.MaxDepth)
		}
		if !utf8.ValidString(c.Title + c.Goal + strings.Join(c.Acceptance, "")) {
			bad("text is not valid UTF-8")
		}
	}
	if len(problems) > 0 {
		return "the children were rejected: " + strings.Join(problems, "; ")
	}
	return ""
}

// truncateSummary cuts a summary to maxSummaryBytes on a rune boundary.
func truncateSummary(s string) string {
	return baton.Truncate(strings.TrimSpace(s), maxSummaryBytes, " [truncated]")
}
