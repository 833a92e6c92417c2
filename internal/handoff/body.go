// Package handoff turns a session's state into a packet (baton handoff)
// and a packet into the next session's prompt (baton pickup). It fills what
// tools can know (git state, touched files, session metadata) and leaves
// judgment to the agent or person who writes the sections.
package handoff

import (
	"strings"
	"unicode"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
)

// headingAliases maps normalized headings that people and agents write to
// the canonical packet heading.
var headingAliases = map[string]string{
	"nextprompt":             baton.SectionNextPrompt,
	"nextpromptdraft":        baton.SectionNextPrompt,
	"prompt":                 baton.SectionNextPrompt,
	"nextstep":               baton.SectionNextPrompt,
	"nextsteps":              baton.SectionNextPrompt,
	"validators":             baton.SectionValidators,
	"exitcriteria":           baton.SectionValidators,
	"validatorsexitcriteria": baton.SectionValidators,
	"questions":              baton.SectionOpenQuestions,
	"files":                  baton.SectionRelevantFiles,
	"goal":                   baton.SectionIntent,
}

func normalize(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CanonicalHeading maps a heading to its canonical packet heading, or
// returns it unchanged when it names no canonical section.
func CanonicalHeading(h string) string {
	n := normalize(h)
	for _, c := range baton.PacketSections {
		if normalize(c) == n {
			return c
		}
	}
	if c, ok := headingAliases[n]; ok {
		return c
	}
	return strings.TrimSpace(h)
}

// ParseBody splits agent- or person-written markdown into sections keyed
// by canonical heading. Text before the first heading is returned as lead.
// A heading that appears twice has its bodies joined.
func ParseBody(md string) (lead string, sections []baton.Section) {
	pre, secs := frontmatter.ParseSections(md)
	for _, s := range secs {
		h := CanonicalHeading(s.Heading)
		merged := false
		for i := range sections {
			if sections[i].Heading == h {
				sections[i].Body = strings.TrimSpace(sections[i].Body + "\n\n" + strings.TrimSpace(s.Body))
				merged = true
				break
			}
		}
		if !merged {
			sections = append(sections, baton.Section{Heading: h, Body: strings.TrimSpace(s.Body)})
		}
	}
	return strings.TrimSpace(pre), sections
}

// subsections splits a section body at "### " headings (outside fences).
func subsections(body string) (lead string, subs map[string]string) {
	subs = map[string]string{}
	var cur string
	var buf strings.Builder
	inFence := false
	flush := func() {
		if cur == "" {
			lead = buf.String()
		} else {
			subs[cur] += buf.String()
		}
		buf.Reset()
	}
	for _, line := range strings.SplitAfter(body, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "### ") {
			flush()
			cur = normalize(strings.TrimPrefix(strings.TrimSpace(line), "### "))
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return lead, subs
}

// bulletPaths returns the path named by each "- " or "* " bullet: the
// first `code span`, else the first word.
func bulletPaths(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "- ") && !strings.HasPrefix(t, "* ") {
			continue
		}
		t = strings.TrimSpace(t[2:])
		if strings.HasPrefix(t, "[ ] ") || strings.HasPrefix(t, "[x] ") {
			t = t[4:]
		}
		var p string
		if i := strings.IndexByte(t, '`'); i >= 0 {
			if j := strings.IndexByte(t[i+1:], '`'); j > 0 {
				p = t[i+1 : i+1+j]
			}
		}
		if p == "" {
			p, _, _ = strings.Cut(t, " ")
		}
		p = strings.TrimRight(strings.TrimSpace(p), ",;:")
		if p != "" && p != "(none)" {
			out = append(out, p)
		}
	}
	return out
}

// appendUnique appends the values of add missing from list.
func appendUnique(list []string, add ...string) []string {
	seen := make(map[string]bool, len(list))
	for _, v := range list {
		seen[v] = true
	}
	for _, v := range add {
		if v != "" && !seen[v] {
			seen[v] = true
			list = append(list, v)
		}
	}
	return list
}
