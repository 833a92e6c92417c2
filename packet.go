package baton

import (
	"strings"
	"time"
)

// PacketStatus is where a packet is in its life.
type PacketStatus string

const (
	PacketDraft   PacketStatus = "draft"
	PacketActive  PacketStatus = "active"
	PacketDone    PacketStatus = "done"
	PacketBlocked PacketStatus = "blocked"
)

// Valid reports whether s is one of the four packet statuses.
func (s PacketStatus) Valid() bool {
	switch s {
	case PacketDraft, PacketActive, PacketDone, PacketBlocked:
		return true
	}
	return false
}

// The canonical packet sections, by heading. Tools rely on their order.
const (
	SectionIntent        = "Intent"
	SectionContext       = "Context"
	SectionConstraints   = "Constraints"
	SectionDecisions     = "Decisions"
	SectionRelevantFiles = "Relevant Files"
	SectionNextPrompt    = "Next Prompt (Draft)"
	SectionPlan          = "Plan"
	SectionValidators    = "Validators / Exit Criteria"
	SectionOpenQuestions = "Open Questions"
	SectionNotes         = "Notes"
)

// PacketSections lists the canonical headings in file order.
var PacketSections = []string{
	SectionIntent, SectionContext, SectionConstraints, SectionDecisions,
	SectionRelevantFiles, SectionNextPrompt, SectionPlan, SectionValidators,
	SectionOpenQuestions, SectionNotes,
}

// Section is one "## Heading" of a markdown artifact and the raw text under
// it, up to the next heading of the same level. Body keeps its bytes as
// written, trailing blank lines included, so a rewrite changes nothing.
type Section struct {
	Heading string
	Body    string
}

// Text returns the body without surrounding blank space.
func (s Section) Text() string { return strings.TrimSpace(s.Body) }

// Field is a frontmatter entry baton does not know, kept verbatim (its key
// line and any continuation lines) so that it survives a rewrite.
type Field struct {
	Key string
	Raw string
}

// Packet is a durable markdown handoff: frontmatter plus canonical
// sections, editable by a person and renderable into the next prompt.
type Packet struct {
	ID        string
	CreatedAt time.Time
	UpdatedAt time.Time
	Status    PacketStatus
	Purpose   string

	Source                 string // claude, codex, droid, pi, factory, user, unknown
	SessionID              string
	TranscriptPath         string
	RelevantFilesConfirmed []string
	RelevantFilesSuggested []string
	Validators             []string
	LoopPromise            *string
	LoopMaxIterations      int

	// Extra holds unknown frontmatter entries in file order.
	Extra []Field
	// Preamble is any text between the frontmatter and the first heading.
	Preamble string
	// Sections holds every "## " section in file order, canonical or not.
	Sections []Section
}

// Validate checks the invariants every stored packet keeps: a valid id, a
// known status, a purpose, and timestamps that do not run backwards.
func (p *Packet) Validate() error {
	if err := CheckID("packet", p.ID); err != nil {
		return err
	}
	if !p.Status.Valid() {
		return Errorf(Invalid, "packet %s: status %q is not one of draft, active, done, blocked", p.ID, p.Status)
	}
	if strings.TrimSpace(p.Purpose) == "" {
		return Errorf(Invalid, "packet %s: purpose is empty", p.ID)
	}
	if p.CreatedAt.IsZero() || p.UpdatedAt.IsZero() {
		return Errorf(Invalid, "packet %s: created_at and updated_at are required", p.ID)
	}
	if p.UpdatedAt.Before(p.CreatedAt) {
		return Errorf(Invalid, "packet %s: updated_at is before created_at", p.ID)
	}
	if p.LoopMaxIterations < 0 {
		return Errorf(Invalid, "packet %s: loop_max_iterations is negative", p.ID)
	}
	return nil
}

// Section returns the section with heading h and whether it exists.
func (p *Packet) Section(h string) (Section, bool) {
	return findSection(p.Sections, h)
}

// SectionText returns the trimmed body of section h, or "".
func (p *Packet) SectionText(h string) string {
	s, _ := p.Section(h)
	return s.Text()
}

func findSection(ss []Section, h string) (Section, bool) {
	for _, s := range ss {
		if s.Heading == h {
			return s, true
		}
	}
	return Section{}, false
}
