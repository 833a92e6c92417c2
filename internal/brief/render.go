package brief

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/prompt"
)

// Bounds on text that comes from GitHub, so one long body cannot crowd out
// the rest of a brief. Each cut says where the whole text is.
const (
	// maxBodyBytes bounds a pull request's or issue's body.
	maxBodyBytes = 16 << 10
	// maxCommentBytes bounds one comment.
	maxCommentBytes = 4 << 10
	// maxFileListBytes bounds the list of changed files.
	maxFileListBytes = 16 << 10
	// maxCutListBytes bounds the list of files the diff budget cut.
	maxCutListBytes = 4 << 10
)

// Section keys, for reports and tests.
const (
	keyTask     = "task"
	keyContext  = "context"
	keyLinked   = "linked"
	keyFiles    = "files"
	keyDiff     = "diff"
	keyComments = "comments"
	keyRelevant = "relevant-files"
	keyTools    = "tools"
	keyDone     = "definition-of-done"
	keyOODA     = "ooda"
)

// Drop ranks: over budget, tools go first, then relevant files, comments
// and linked items. The task, the Definition of Done and the OODA framing
// are bookends (never dropped or cut); the context, the files and the
// diff are required.
const (
	rankTools    = 1
	rankRelevant = 2
	rankComments = 3
	rankLinked   = 4
)

const orient = `**Orient (context alignment)**
If you need more context beyond what's provided, propose what you think you need. I'll confirm, challenge, or narrow. Iterate until aligned, then fetch.`

const reopen = `Both loops can re-open if new information changes things.`

// oodaSection renders "How This Goes (OODA)" with the task's Decide step.
func oodaSection(decide string) prompt.Section {
	return prompt.Section{
		Key: keyOODA, Heading: "### How This Goes (OODA)", Bookend: true,
		Body: orient + "\n\n**Decide (action alignment)**\n" + decide + "\n\n" + reopen,
	}
}

// cutText keeps at most limit bytes of s, at the last line break in the
// second half of the room when there is one, else at a rune boundary. It
// reports whether it cut.
func cutText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= limit/2 {
		n = i
	}
	return strings.TrimRight(s[:n], " \t\r\n"), true
}

// body renders a body or "(no description)", cut to MaxBodyBytes with a
// note naming the command that shows all of it.
func body(s, fullCmd string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no description)"
	}
	if cut, ok := cutText(s, maxBodyBytes); ok {
		return cut + fmt.Sprintf("\n\n[Body truncated at %s. `%s` shows all of it.]", kb(maxBodyBytes), fullCmd)
	}
	return s
}

// kb formats a byte count the way the seed's notice does ("50KB").
func kb(n int64) string {
	switch {
	case n >= 1024 && n%1024 == 0:
		return fmt.Sprintf("%dKB", n/1024)
	case n >= 1024:
		return fmt.Sprintf("%.1fKB", float64(n)/1024)
	}
	return fmt.Sprintf("%d bytes", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// allKept reports whether a pack kept every section whole.
func allKept(p *prompt.Pack) bool {
	for _, s := range p.Report.Sections {
		if s.Outcome == prompt.Dropped || s.Outcome == prompt.Truncated {
			return false
		}
	}
	return true
}

// fitLargest builds the pack for the largest n in [0, limit] that keeps
// every section whole, assuming larger n means a larger pack, to within
// step (a coarser step saves builds when each one counts tokens). When
// even 0 does not fit, it returns the pack for 0 as Build cut it (or
// Build's error when the required sections cannot fit at all).
func fitLargest(limit, step int64, build func(n int64) (*prompt.Pack, error)) (*prompt.Pack, int64, error) {
	p, err := build(limit)
	if err != nil || allKept(p) || limit <= 0 {
		return p, limit, err
	}
	best, err := build(0)
	if err != nil || !allKept(best) {
		return best, 0, err
	}
	lo, hi := int64(0), limit // build(lo) fits, build(hi) does not
	for hi-lo > max(step, 1) {
		mid := lo + (hi-lo)/2
		p, err := build(mid)
		if err != nil {
			return nil, 0, err
		}
		if allKept(p) {
			lo, best = mid, p
		} else {
			hi = mid
		}
	}
	return best, lo, nil
}

// quoteLines prefixes every line of s with "> ".
func quoteLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + l
		}
	}
	return strings.Join(lines, "\n")
}

// repoFlag returns " --repo owner/name" for commands that must name the
// repository, or "" when the agent's checkout is the repository.
func repoFlag(repo string) string {
	if repo == "" {
		return ""
	}
	return " --repo " + repo
}
