package delivery

import (
	"slices"
	"strings"

	"github.com/baton-agent/baton"
)

// NonInteractive is appended to every phase's system prompt: a plan run
// once answered with a multiple-choice question and nobody was there.
const NonInteractive = "You are running non-interactively: do not ask questions; complete the task."

// BuildPrompt is the one prompt of every agent phase (seed 000): the
// summary, then "## References" with every ref URL in ref order, a line
// note's followed by the file and line it is about. Refs without a URL
// are skipped, and the section is left out when no ref has one. The plan text and review feedback are never copied in: the plan is
// committed on the work branch (docs/plan.md) and feedback is posted where
// a review ref points.
func BuildPrompt(d *baton.Delivery) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(d.Summary))
	b.WriteString("\n")
	if len(RefURLs(d.Refs)) > 0 {
		b.WriteString("\n## References\n\n")
		for _, r := range d.Refs {
			switch {
			case r.URL == "":
			case r.Type == baton.RefReviewLine:
				b.WriteString("- " + r.URL + " (a note on " + r.Label + ")\n")
			default:
				b.WriteString("- " + r.URL + "\n")
			}
		}
	}
	return b.String()
}

// RefURLs returns the URLs of refs, in order, skipping refs without one;
// with roles, only refs of those roles.
func RefURLs(refs []baton.Ref, roles ...baton.RefRole) []string {
	var urls []string
	for _, r := range refs {
		if r.URL == "" || len(roles) > 0 && !slices.Contains(roles, r.Role) {
			continue
		}
		urls = append(urls, r.URL)
	}
	return urls
}

// SystemPrompt is a phase's one-line role plus the non-interactive
// directive. base is the base branch the work branch diverges from.
func SystemPrompt(p baton.Phase, base string) string {
	var role string
	switch p {
	case baton.PhasePlan:
		role = "You are the planner of a software delivery: read the request and the repository and write an implementation plan. Write the plan in your final message; do not create or edit files."
	case baton.PhaseImplement:
		role = "You are the implementer of a software delivery: make the change the request asks for, following the plan in docs/plan.md and any review feedback referenced below. Leave your changes in the working tree: baton commits and pushes them when you finish."
	case baton.PhaseReview:
		role = "You are the reviewer of a software delivery: review the changes on this branch (git diff " + base + "...HEAD) against the request and docs/plan.md. End your final message with one JSON object: {\"verdict\": \"pass\" or \"not_pass\", \"summary\": \"...\", \"feedback\": \"...\"}."
	default:
		return ""
	}
	return role + " " + NonInteractive
}

// ReviewSchema is the JSON Schema of the review verdict, passed to the
// agent's structured-output option (claude --json-schema, codex
// --output-schema).
var ReviewSchema = []byte(`{
  "type": "object",
  "properties": {
    "verdict": {"type": "string", "enum": ["pass", "not_pass"]},
    "summary": {"type": "string"},
    "feedback": {"type": "string"}
  },
  "required": ["verdict", "summary", "feedback"],
  "additionalProperties": false
}`)
