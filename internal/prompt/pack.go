// Package prompt builds prompt packs: an ordered list of sections rendered
// deterministically under a budget. Every prompt baton emits is a pack.
//
// Over budget, droppable sections go first, lowest DropRank first; then the
// last section that is not a bookend is cut on a UTF-8 boundary and marked
// "[truncated]". Bookends (the contract at the top, the output rules at the
// bottom) are never dropped or cut. If the sections that must stay do not
// fit even with the cut, Build returns an Invalid error that says how much
// room they need.
package prompt

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/baton-agent/baton"
)

// DefaultBudgetBytes is the byte budget when none is given.
const DefaultBudgetBytes = 40_000

// TruncatedMarker ends a section that was cut to fit the budget.
const TruncatedMarker = "\n[truncated]"

// separator joins rendered sections.
const separator = "\n\n"

// Section is one part of a prompt.
type Section struct {
	// Key names the section in reports and tests ("goal", "diff").
	Key string
	// Heading is rendered on its own line above the body ("## Goal");
	// empty renders the body alone.
	Heading string
	// Body is the section's text. Trailing white space is trimmed when
	// rendering.
	Body string
	// Required sections are never dropped. A section that is not required
	// is droppable, in ascending DropRank order.
	Required bool
	DropRank int
	// Bookend sections are never dropped and never truncated.
	Bookend bool
}

func (s Section) render(body string) string {
	body = strings.TrimRight(body, " \t\r\n")
	if s.Heading == "" {
		return body
	}
	if body == "" {
		return s.Heading
	}
	return s.Heading + "\n\n" + body
}

// size is len(s.render(body)) without building the string.
func (s Section) size(body string) int {
	n := len(strings.TrimRight(body, " \t\r\n"))
	switch {
	case s.Heading == "":
		return n
	case n == 0:
		return len(s.Heading)
	}
	return len(s.Heading) + 2 + n
}

func (s Section) mustStay() bool { return s.Required || s.Bookend }

// Counter measures text in a budget's unit.
type Counter interface {
	// Count returns the size of text.
	Count(text string) int
	// Unit names the unit ("bytes", "tokens") for messages.
	Unit() string
}

// Bytes counts UTF-8 bytes.
type Bytes struct{}

func (Bytes) Count(text string) int { return len(text) }
func (Bytes) Unit() string          { return "bytes" }

// Options set the budgets. A zero BudgetBytes means DefaultBudgetBytes; a
// negative one means no byte budget. Tokens are checked after bytes, and
// only when both BudgetTokens and Tokens are set.
type Options struct {
	BudgetBytes  int
	BudgetTokens int
	Tokens       Counter
}

// Outcome says what happened to a section.
type Outcome string

const (
	Kept      Outcome = "kept"
	Dropped   Outcome = "dropped"
	Truncated Outcome = "truncated"
	Empty     Outcome = "empty" // the body is blank: the section is left out
)

// SectionReport is one line of a pack's explanation.
type SectionReport struct {
	Key       string  `json:"key"`
	Outcome   Outcome `json:"outcome"`
	Required  bool    `json:"required"`
	Bookend   bool    `json:"bookend,omitempty"`
	DropRank  int     `json:"drop_rank,omitempty"`
	Bytes     int     `json:"bytes"`      // rendered size as first built
	KeptBytes int     `json:"kept_bytes"` // rendered size in the final text
}

// Report explains a built pack.
type Report struct {
	BudgetBytes  int             `json:"budget_bytes"`
	BudgetTokens int             `json:"budget_tokens,omitempty"`
	Bytes        int             `json:"bytes"`
	Tokens       int             `json:"tokens,omitempty"`
	Sections     []SectionReport `json:"sections"`
}

// Pack is a built prompt.
type Pack struct {
	Text   string
	Report Report
}

// Keys returns the keys of the sections present in the text, in order.
func (p *Pack) Keys() []string {
	var keys []string
	for _, s := range p.Report.Sections {
		if s.Outcome == Kept || s.Outcome == Truncated {
			keys = append(keys, s.Key)
		}
	}
	return keys
}

// Build renders sections under the budgets in opts.
func Build(sections []Section, opts Options) (*Pack, error) {
	budget := opts.BudgetBytes
	if budget == 0 {
		budget = DefaultBudgetBytes
	}
	b := &builder{secs: sections, bodies: make([]string, len(sections)), state: make([]Outcome, len(sections))}
	for i, s := range sections {
		b.bodies[i] = s.Body
		b.state[i] = Kept
		if strings.TrimSpace(s.Body) == "" {
			b.state[i] = Empty
		}
	}
	first := make([]int, len(sections))
	for i, s := range sections {
		if b.state[i] != Empty {
			first[i] = s.size(s.Body)
		}
	}
	if budget > 0 {
		if err := b.fit(Bytes{}, budget); err != nil {
			return nil, err
		}
	}
	if opts.BudgetTokens > 0 && opts.Tokens != nil {
		if err := b.fit(opts.Tokens, opts.BudgetTokens); err != nil {
			return nil, err
		}
	}
	text := b.render()
	rep := Report{BudgetBytes: max(budget, 0), Bytes: len(text)}
	if opts.BudgetTokens > 0 && opts.Tokens != nil {
		rep.BudgetTokens = opts.BudgetTokens
		rep.Tokens = opts.Tokens.Count(text)
	}
	for i, s := range sections {
		kept := 0
		if b.present(i) {
			kept = s.size(b.bodies[i])
		}
		rep.Sections = append(rep.Sections, SectionReport{
			Key: s.Key, Outcome: b.state[i], Required: s.Required, Bookend: s.Bookend,
			DropRank: dropRank(s), Bytes: first[i], KeptBytes: kept,
		})
	}
	return &Pack{Text: text, Report: rep}, nil
}

func dropRank(s Section) int {
	if s.mustStay() {
		return 0
	}
	return s.DropRank
}

type builder struct {
	secs   []Section
	bodies []string
	state  []Outcome
}

func (b *builder) present(i int) bool { return b.state[i] == Kept || b.state[i] == Truncated }

func (b *builder) render() string {
	var sb strings.Builder
	sb.Grow(b.size())
	for i, s := range b.secs {
		if !b.present(i) {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString(separator)
		}
		sb.WriteString(s.render(b.bodies[i]))
	}
	sb.WriteByte('\n')
	return sb.String()
}

// size is len(b.render()), computed without rendering.
func (b *builder) size() int {
	n, parts := 1, 0 // the final newline
	for i, s := range b.secs {
		if b.present(i) {
			n += s.size(b.bodies[i])
			parts++
		}
	}
	if parts > 1 {
		n += (parts - 1) * len(separator)
	}
	return n
}

// measure is the rendered text's size in c's unit; bytes need no render.
func (b *builder) measure(c Counter) int {
	if _, ok := c.(Bytes); ok {
		return b.size()
	}
	return c.Count(b.render())
}

// fit drops and truncates until the rendered text measures at most budget.
func (b *builder) fit(c Counter, budget int) error {
	if b.measure(c) <= budget {
		return nil
	}
	for _, i := range b.dropOrder() {
		b.state[i] = Dropped
		if b.measure(c) <= budget {
			return nil
		}
	}
	t := b.truncationTarget()
	if t < 0 {
		return b.tooSmall(c, budget)
	}
	cut, ok := b.largestCut(c, budget, t)
	if !ok {
		return b.tooSmall(c, budget)
	}
	b.bodies[t] = cutBody(b.bodies[t], cut)
	b.state[t] = Truncated
	return nil
}

// dropOrder lists the droppable sections still present, lowest DropRank
// first; equal ranks drop from the bottom of the prompt up.
func (b *builder) dropOrder() []int {
	var idx []int
	for i, s := range b.secs {
		if b.present(i) && !s.mustStay() {
			idx = append(idx, i)
		}
	}
	for i := 1; i < len(idx); i++ { // insertion sort: stable and tiny
		for j := i; j > 0 && less(b.secs, idx[j], idx[j-1]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}

func less(secs []Section, a, b int) bool {
	if secs[a].DropRank != secs[b].DropRank {
		return secs[a].DropRank < secs[b].DropRank
	}
	return a > b
}

// truncationTarget is the last present section that is not a bookend.
func (b *builder) truncationTarget() int {
	for i := len(b.secs) - 1; i >= 0; i-- {
		if b.present(i) && !b.secs[i].Bookend {
			return i
		}
	}
	return -1
}

// cutBody keeps the first n bytes of body (n on a rune boundary) and marks
// the cut.
func cutBody(body string, n int) string {
	return strings.TrimRight(body[:n], " \t\r\n") + TruncatedMarker
}

// largestCut finds the longest prefix of section t's body, cut on a rune
// boundary, that lets the whole text fit. It reports false when even an
// empty prefix does not fit.
func (b *builder) largestCut(c Counter, budget, t int) (int, bool) {
	body := b.bodies[t]
	runeStart := func(n int) int {
		for n > 0 && n < len(body) && !utf8.RuneStart(body[n]) {
			n--
		}
		return n
	}
	measure := func(n int) int {
		saved := b.bodies[t]
		b.bodies[t] = cutBody(body, n)
		size := b.measure(c)
		b.bodies[t] = saved
		return size
	}
	fixed := measure(0)
	if fixed > budget {
		return 0, false
	}
	if _, isBytes := c.(Bytes); isBytes {
		// Bytes add up: the body may take whatever the rest leaves.
		return runeStart(min(len(body), budget-fixed)), true
	}
	// Other units grow with the prefix but do not add up: binary search.
	// lo always fits; hi never does.
	lo, hi := 0, len(body)+1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if measure(runeStart(mid)) <= budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	return runeStart(lo), true
}

func (b *builder) tooSmall(c Counter, budget int) error {
	var keys []string
	saved := append([]string(nil), b.bodies...)
	for i, s := range b.secs {
		if b.present(i) && s.mustStay() {
			keys = append(keys, s.Key)
		}
	}
	if t := b.truncationTarget(); t >= 0 {
		b.bodies[t] = cutBody(b.bodies[t], 0)
	}
	need := b.measure(c)
	copy(b.bodies, saved)
	return baton.Errorf(baton.Invalid,
		"prompt budget of %d %s is too small: the sections that must stay (%s) need at least %d %s; raise the budget",
		budget, c.Unit(), strings.Join(keys, ", "), need, c.Unit())
}

// String renders a one-line summary of r for logs.
func (r Report) String() string {
	var kept, dropped, trunc []string
	for _, s := range r.Sections {
		switch s.Outcome {
		case Kept:
			kept = append(kept, s.Key)
		case Dropped:
			dropped = append(dropped, s.Key)
		case Truncated:
			trunc = append(trunc, s.Key)
		}
	}
	return fmt.Sprintf("%d/%d bytes; kept %s; dropped %s; truncated %s",
		r.Bytes, r.BudgetBytes, list(kept), list(dropped), list(trunc))
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Fence returns a code fence longer than any run of backticks in s, so
// text quoted in a prompt cannot close its fence early.
func Fence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
