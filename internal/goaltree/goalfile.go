package goaltree

import (
	"slices"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
)

// GoalFile is a parsed GOAL.md: the run's root goal.
//
//	---
//	id: jwt-auth            (optional: the run id)
//	next: execute           (optional: execute, or decompose by default)
//	---
//	# Add JWT authentication          <- title
//
//	Protect the API with JWT tokens.  <- goal: everything up to the next "## "
//
//	## Acceptance                     <- "- " or "* " items (also "Acceptance Criteria")
//	- POST /login returns a token
//
// Other "## " sections are part of the goal text, headings included.
type GoalFile struct {
	ID         string
	Next       NodeNext // the root's next; empty means decompose
	Title      string
	Goal       string
	Acceptance []string
}

// maxGoalFileBytes bounds GOAL.md.
const maxGoalFileBytes = 1 << 20

// ParseGoalFile reads a GOAL.md. It needs a "# " title; the id, when given
// in the frontmatter, must be a valid id. Errors are Invalid.
func ParseGoalFile(data []byte) (*GoalFile, error) {
	if len(data) > maxGoalFileBytes {
		return nil, baton.Errorf(baton.Invalid, "goal file is %d bytes, more than the %d allowed", len(data), maxGoalFileBytes)
	}
	g := &GoalFile{Acceptance: []string{}}
	text := strings.TrimPrefix(frontmatter.LF(string(data)), "\ufeff")
	body := text
	if strings.HasPrefix(text, "---\n") {
		doc, err := frontmatter.Parse([]byte(text))
		if err != nil {
			return nil, baton.WrapError(baton.Invalid, err, "goal file frontmatter")
		}
		for _, e := range doc.Front {
			if e.Key != "id" && e.Key != "next" {
				continue
			}
			if e.Node.Kind != frontmatter.ScalarNode {
				return nil, baton.Errorf(baton.Invalid, "goal file: %s must be a plain value", e.Key)
			}
			v := strings.TrimSpace(e.Node.Value)
			if e.Key == "next" {
				g.Next = NodeNext(v)
				if !g.Next.Valid() {
					return nil, baton.Errorf(baton.Invalid, "goal file: next is %q, want execute or decompose", v)
				}
				continue
			}
			g.ID = v
			if err := baton.CheckID("run", g.ID); err != nil {
				return nil, err
			}
		}
		body = doc.Body
	}
	pre, sections := frontmatter.ParseSections(body)
	var parts []string
	var intro strings.Builder
	for _, line := range strings.Split(pre, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok && g.Title == "" {
			g.Title = strings.TrimSpace(t)
			continue
		}
		intro.WriteString(line + "\n")
	}
	parts = append(parts, strings.TrimSpace(intro.String()))
	for _, s := range sections {
		switch strings.ToLower(strings.TrimSpace(s.Heading)) {
		case "acceptance", "acceptance criteria":
			g.Acceptance = append(g.Acceptance, listItems(s.Body)...)
		default:
			parts = append(parts, strings.TrimSpace("## "+s.Heading+"\n"+strings.TrimSpace(s.Body)))
		}
	}
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" })
	g.Goal = strings.Join(parts, "\n\n")
	if g.Title == "" {
		return nil, baton.Errorf(baton.Invalid, "goal file has no title: start it with a \"# \" heading")
	}
	if len(g.Title) > maxTitleBytes {
		return nil, baton.Errorf(baton.Invalid, "goal file title is longer than %d bytes", maxTitleBytes)
	}
	return g, nil
}

// listItems returns the "- " and "* " items of a markdown list; a line
// indented under an item continues it.
func listItems(body string) []string {
	var items []string
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if item, ok := cutBullet(t); ok && (line == t || !startsIndented(line)) {
			if item != "" {
				items = append(items, item)
			}
			continue
		}
		if t != "" && len(items) > 0 && startsIndented(line) {
			items[len(items)-1] += " " + t
		}
	}
	return items
}

func cutBullet(t string) (string, bool) {
	for _, p := range []string{"- [ ] ", "- [x] ", "- ", "* "} {
		if rest, ok := strings.CutPrefix(t, p); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

func startsIndented(line string) bool {
	return strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
}
