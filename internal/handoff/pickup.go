package handoff

import (
	"context"
	"fmt"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/gitx"
	"github.com/baton-agent/baton/internal/prompt"
)

// Drop ranks of pickup's droppable sections: notes go first, validators
// last.
const (
	rankNotes = iota + 1
	rankExtra
	rankSuggested
	rankContext
	rankQuestions
	rankPlan
	rankDecisions
	rankRepoCheck
	rankValidators
)

// trustRepo closes every pickup: packets drift, repositories do not lie.
const trustRepo = `## How to use this packet

The repository is the source of truth. Where this packet and the repository disagree (files, branch, behaviour, what is already done), trust the repository, say so in one line, and go on from what is really there. Start with the Next Prompt.`

// Sections builds the pickup prompt's sections for p. Drift is a rendered
// repository check ("" to leave it out).
func Sections(p *baton.Packet, drift string) []prompt.Section {
	header := fmt.Sprintf("# Pickup: %s\n\nA previous session handed this work over in packet `%s` (status %s, created %s, updated %s).",
		p.Purpose, p.ID, p.Status, baton.FormatTime(p.CreatedAt), baton.FormatTime(p.UpdatedAt))
	np := p.SectionText(baton.SectionNextPrompt)
	if np == "" {
		np = "(The packet has no Next Prompt. Continue from the intent below.)"
	}
	confirmed, suggested := packetFiles(p)
	secs := []prompt.Section{
		{Key: "header", Body: header, Bookend: true},
		{Key: "next_prompt", Heading: "## Next Prompt", Body: np, Required: true},
		{Key: "intent", Heading: "## Intent", Body: p.SectionText(baton.SectionIntent), Required: true},
		{Key: "context", Heading: "## Context", Body: p.SectionText(baton.SectionContext), DropRank: rankContext},
		{Key: "constraints", Heading: "## Constraints", Body: p.SectionText(baton.SectionConstraints), Required: true},
		{Key: "decisions", Heading: "## Decisions", Body: p.SectionText(baton.SectionDecisions), DropRank: rankDecisions},
		{Key: "files_confirmed", Heading: "## Relevant Files (confirmed)", Body: bullets(confirmed), Required: true},
		{Key: "files_suggested", Heading: "## Relevant Files (suggested: touched in the previous session)", Body: bullets(suggested), DropRank: rankSuggested},
		{Key: "plan", Heading: "## Plan", Body: p.SectionText(baton.SectionPlan), DropRank: rankPlan},
		{Key: "validators", Heading: "## Validators / Exit Criteria", Body: p.SectionText(baton.SectionValidators), DropRank: rankValidators},
		{Key: "open_questions", Heading: "## Open Questions", Body: p.SectionText(baton.SectionOpenQuestions), DropRank: rankQuestions},
		{Key: "notes", Heading: "## Notes", Body: p.SectionText(baton.SectionNotes), DropRank: rankNotes},
	}
	for _, s := range p.Sections {
		if !isCanonical(s.Heading) && s.Text() != "" {
			secs = append(secs, prompt.Section{Key: "extra:" + baton.Slug(s.Heading, "section"), Heading: "## " + s.Heading, Body: s.Text(), DropRank: rankExtra})
		}
	}
	if drift != "" {
		secs = append(secs, prompt.Section{Key: "repo_check", Heading: "## Repository check (now)", Body: drift, DropRank: rankRepoCheck})
	}
	return append(secs, prompt.Section{Key: "trust_repo", Body: trustRepo, Bookend: true})
}

func bullets(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "- `%s`\n", p)
	}
	return b.String()
}

// packetFiles returns the packet's confirmed and suggested files: the
// frontmatter lists, plus bullets a person added to the body.
func packetFiles(p *baton.Packet) (confirmed, suggested []string) {
	_, subs := subsections(p.SectionText(baton.SectionRelevantFiles))
	confirmed = appendUnique(append([]string(nil), p.RelevantFilesConfirmed...), bulletPaths(subs["confirmed"])...)
	isConfirmed := map[string]bool{}
	for _, c := range confirmed {
		isConfirmed[c] = true
	}
	for _, s := range appendUnique(append([]string(nil), p.RelevantFilesSuggested...), bulletPaths(subs["suggested"])...) {
		if !isConfirmed[s] {
			suggested = append(suggested, s)
		}
	}
	return confirmed, suggested
}

// recordedState reads the branch and HEAD a handoff recorded in Context.
func recordedState(p *baton.Packet) (branch, head string) {
	for _, line := range strings.Split(p.SectionText(baton.SectionContext), "\n") {
		switch {
		case strings.HasPrefix(line, stateBranch):
			branch = codeSpan(strings.TrimPrefix(line, stateBranch))
		case strings.HasPrefix(line, stateHead):
			head = codeSpan(strings.TrimPrefix(line, stateHead))
		}
	}
	return branch, head
}

func codeSpan(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "`") {
		return ""
	}
	v, _, _ := strings.Cut(s[1:], "`")
	return v
}

// Drift compares the packet with the repository as it is now and lists
// what differs: branch, HEAD, confirmed files that are gone, uncommitted
// work. It returns "" outside a git repository. HEAD's subject comes
// from the store when a handoff recorded it at this commit.
func Drift(ctx context.Context, st *fsstore.Store, p *baton.Packet) string {
	repo := gitx.Open(st.Root())
	repo.Subjects = st
	confirmed, suggested := packetFiles(p)
	snap, err := repo.Snapshot(ctx, append(append([]string(nil), confirmed...), suggested...)...)
	if err != nil {
		return ""
	}
	var lines []string
	recBranch, recHead := recordedState(p)
	branch := snap.Branch
	if branch == "" {
		branch = "(detached HEAD)"
	}
	if recBranch != "" && recBranch != branch {
		lines = append(lines, fmt.Sprintf("- The packet was written on branch `%s`; the repository is on `%s`.", recBranch, branch))
	}
	head := snap.Head
	if recHead != "" && head.SHA != "" && !strings.HasPrefix(head.SHA, recHead) {
		if n, err := repo.CommitsBetween(ctx, recHead, head.SHA); err == nil {
			lines = append(lines, fmt.Sprintf("- HEAD moved from `%s` to `%s` (%d commit%s since the handoff): %s.", recHead, head.Short(), n, plural(n), head.Subject))
		} else {
			lines = append(lines, fmt.Sprintf("- HEAD is `%s`; the packet recorded `%s`, which is not in this history (rebased or another branch).", head.Short(), recHead))
		}
	}
	var gone []string
	for _, f := range confirmed {
		if !fileExists(st.Root(), f) {
			gone = append(gone, "`"+f+"`")
		}
	}
	if len(gone) > 0 {
		lines = append(lines, "- Confirmed files that no longer exist: "+strings.Join(gone, ", ")+".")
	}
	if ours := workChanges(snap.Changes); snap.Partial && len(ours) > 0 {
		var names []string
		for _, c := range ours {
			names = append(names, "`"+c.Path+"`")
		}
		lines = append(lines, fmt.Sprintf("- %d of the packet's files differ from HEAD now: %s (the work tree is too large to check whole; `git status` shows the rest).", len(ours), strings.Join(names, ", ")))
	} else if n := len(ours); n > 0 {
		lines = append(lines, fmt.Sprintf("- %d uncommitted change%s in the work tree now (`git status` shows them).", n, plural(n)))
	}
	if len(lines) == 0 {
		desc := "branch `" + branch + "`"
		if head.SHA != "" {
			desc += ", HEAD `" + head.Short() + "`"
		}
		return "The repository matches what the packet recorded (" + desc + ")."
	}
	return strings.Join(lines, "\n")
}

// Picked is a packet rendered as a prompt.
type Picked struct {
	Pack   *prompt.Pack
	Packet *baton.Packet
	// Fallback is set when "latest" found no draft or active packet and
	// took the most recently updated one of another status.
	Fallback bool
	// Skipped are packets that could not be read on the way to "latest".
	Skipped []error
}

// Pickup resolves ref (an id, a unique prefix, or "latest") and renders
// its packet as a prompt pack. It never changes the packet. Every edge
// (the CLI, the MCP server) picks up through it.
func Pickup(ctx context.Context, st *fsstore.Store, ref string, opts prompt.Options) (*Picked, error) {
	var out Picked
	if ref == "" || ref == fsstore.Latest {
		l, err := st.Latest()
		if err != nil {
			return nil, err
		}
		out.Skipped, out.Fallback = l.Skipped, l.Fallback
		if l.Packet == nil {
			if len(l.Skipped) > 0 {
				return &out, baton.Errorf(baton.NotFound, "no packet can be read (%d skipped): fix or remove them, or create one with `baton handoff <purpose>`", len(l.Skipped))
			}
			return &out, baton.Errorf(baton.NotFound, "no packets yet: create one with `baton handoff <purpose>`")
		}
		out.Packet = l.Packet
	} else {
		p, err := st.ResolvePacket(ref)
		if err != nil {
			return nil, err
		}
		out.Packet = p
	}
	pack, err := prompt.Build(Sections(out.Packet, Drift(ctx, st, out.Packet)), opts)
	if err != nil {
		return &out, err
	}
	out.Pack = pack
	return &out, nil
}
