package handoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/gitx"
)

// NextPromptWarnBytes is the size past which a Next Prompt stops being a
// prompt and becomes a document; handoff warns about it.
const NextPromptWarnBytes = 4 << 10

// maxSuggested bounds the suggested files a packet snapshots.
const maxSuggested = 30

// maxDirtyListed bounds the uncommitted paths listed in Context.
const maxDirtyListed = 20

// Input is what a handoff is made from.
type Input struct {
	Purpose    string
	Body       string   // markdown with canonical headings, from an agent or a person
	NextPrompt string   // replaces the body's Next Prompt when set
	Files      []string // confirmed files, relative to WorkDir or absolute
	Validators []string // commands that say the work is done

	Source         string // harness or "user"
	SessionID      string
	TranscriptPath string
	WorkDir        string
}

// Result is a created packet and what the user should know about it.
type Result struct {
	Packet   *baton.Packet
	Path     string
	Warnings []string
}

// Create writes a draft packet from in. Git state and touched files come
// from git and the relevant-files log, never from the model.
func Create(ctx context.Context, st *fsstore.Store, now time.Time, in Input) (*Result, error) {
	purpose := strings.Join(strings.Fields(in.Purpose), " ")
	if purpose == "" {
		return nil, baton.Errorf(baton.Invalid, "a handoff needs a purpose: baton handoff \"<what the next session should achieve>\"")
	}
	res := &Result{}
	warn := func(format string, args ...any) { res.Warnings = append(res.Warnings, fmt.Sprintf(format, args...)) }

	lead, body := ParseBody(in.Body)
	text := map[string]string{}
	var extra []baton.Section
	for _, s := range body {
		if isCanonical(s.Heading) {
			text[s.Heading] = s.Body
		} else {
			extra = append(extra, s)
		}
	}
	if lead != "" {
		text[baton.SectionNotes] = strings.TrimSpace(lead + "\n\n" + text[baton.SectionNotes])
	}
	if in.NextPrompt != "" {
		if text[baton.SectionNextPrompt] != "" {
			warn("--next-prompt replaced the body's %q section", baton.SectionNextPrompt)
		}
		text[baton.SectionNextPrompt] = strings.TrimSpace(in.NextPrompt)
	}
	if text[baton.SectionIntent] == "" {
		text[baton.SectionIntent] = purpose
	}
	switch np := text[baton.SectionNextPrompt]; {
	case np == "":
		warn("the packet has no Next Prompt: pickup will start from the intent (write one with --next-prompt or a %q section)", "## Next Prompt")
	case len(np) > NextPromptWarnBytes:
		warn("the Next Prompt is %d bytes; keep it under %d so it stays a prompt (move detail to Context or Plan)", len(np), NextPromptWarnBytes)
	}

	// Relevant files: confirmed from flags and the body, suggested from
	// the log since the previous packet.
	_, subs := subsections(text[baton.SectionRelevantFiles])
	var confirmed []string
	// --file paths are relative to where the command runs; paths in the
	// body are written by an agent that thinks in repository paths.
	addConfirmed := func(base string, paths []string, checkExists bool) {
		for _, f := range paths {
			rel, ok := st.RelPath(base, f)
			if !ok {
				warn("%s is outside the project root %s; kept as given", f, st.Root())
				rel = f
			} else if _, err := os.Lstat(filepath.Join(st.Root(), rel)); checkExists && errors.Is(err, fs.ErrNotExist) {
				// As files add says; a packet may name a file still to be
				// written, so it is kept.
				warn("%s does not exist; kept as a file still to be written (check the path)", f)
			}
			confirmed = appendUnique(confirmed, rel)
		}
	}
	addConfirmed(in.WorkDir, in.Files, true)
	addConfirmed(st.Root(), bulletPaths(subs["confirmed"]), false)
	since, err := previousPacketTime(st)
	if err != nil {
		return nil, err
	}
	ranked, stats, err := st.RankFiles(fsstore.FileQuery{Since: since, Unattached: true, Tail: fsstore.RecentLogBytes})
	if err != nil {
		return nil, err
	}
	if stats.Corrupt > 0 {
		warn("skipped %d unreadable line(s) in %s", stats.Corrupt, fsstore.RelevantFilesLog)
	}
	// Files a person confirmed with `baton files add` since the previous
	// packet are confirmed here too.
	for _, r := range ranked {
		if r.Confirmed {
			confirmed = appendUnique(confirmed, r.Path)
		}
	}
	isConfirmed := make(map[string]bool, len(confirmed))
	for _, c := range confirmed {
		isConfirmed[c] = true
	}
	suggested := []string{}
	for _, r := range ranked {
		if len(suggested) >= maxSuggested {
			break
		}
		if !isConfirmed[r.Path] {
			suggested = append(suggested, r.Path)
		}
	}
	for _, p := range bulletPaths(subs["suggested"]) {
		if !isConfirmed[p] {
			suggested = appendUnique(suggested, p)
		}
	}
	text[baton.SectionRelevantFiles] = renderFiles(confirmed, suggested)

	validators := appendUnique(nil, in.Validators...)
	if len(validators) > 0 {
		var b strings.Builder
		if v := text[baton.SectionValidators]; v != "" {
			b.WriteString(v)
			b.WriteString("\n\n")
		}
		for _, v := range validators {
			fmt.Fprintf(&b, "- `%s`\n", v)
		}
		text[baton.SectionValidators] = strings.TrimSpace(b.String())
	}

	if state := repoState(ctx, st, in.WorkDir, append(append([]string(nil), confirmed...), suggested...)); state != "" {
		text[baton.SectionContext] = strings.TrimSpace(text[baton.SectionContext] + "\n\n" + state)
	}

	p := &baton.Packet{
		CreatedAt:              now.UTC().Truncate(time.Second),
		Status:                 baton.PacketDraft,
		Purpose:                purpose,
		Source:                 in.Source,
		SessionID:              in.SessionID,
		TranscriptPath:         in.TranscriptPath,
		RelevantFilesConfirmed: nonNil(confirmed),
		RelevantFilesSuggested: suggested,
		Validators:             validators,
		Preamble:               "\n",
	}
	for _, h := range baton.PacketSections {
		p.Sections = append(p.Sections, baton.Section{Heading: h, Body: sectionBody(text[h])})
	}
	for _, s := range extra {
		p.Sections = append(p.Sections, baton.Section{Heading: s.Heading, Body: sectionBody(s.Body)})
	}
	last := &p.Sections[len(p.Sections)-1]
	last.Body = strings.TrimSuffix(last.Body, "\n") // one newline at the end of the file
	if !strings.HasSuffix(last.Body, "\n") {
		last.Body += "\n"
	}
	if err := st.CreatePacket(ctx, p); err != nil {
		return nil, err
	}
	res.Packet = p
	res.Path = filepath.Join(st.Dir(), fsstore.PacketsDir, p.ID+".md")

	if len(confirmed) > 0 {
		entries := make([]baton.RelevantFile, 0, len(confirmed))
		for _, c := range confirmed {
			entries = append(entries, baton.RelevantFile{Timestamp: p.CreatedAt, FilePath: c, Source: baton.FromUser, PacketID: p.ID, Confidence: 1})
		}
		if err := st.AppendRelevantFiles(ctx, entries...); err != nil {
			warn("could not record confirmed files in %s: %v", fsstore.RelevantFilesLog, err)
		}
	}
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func isCanonical(h string) bool {
	for _, c := range baton.PacketSections {
		if c == h {
			return true
		}
	}
	return false
}

// sectionBody lays out a section: a blank line after the heading, the
// text, and a blank line before the next heading.
func sectionBody(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return "\n"
	}
	return "\n" + text + "\n\n"
}

// previousPacketTime is when the newest existing packet was created, or
// the zero time when there is none.
func previousPacketTime(st *fsstore.Store) (time.Time, error) {
	p, err := st.NewestPacket()
	if err != nil || p == nil {
		return time.Time{}, err
	}
	return p.CreatedAt, nil
}

func renderFiles(confirmed, suggested []string) string {
	var b strings.Builder
	b.WriteString("### Confirmed\n\n")
	writeBullets(&b, confirmed)
	b.WriteString("\n### Suggested\n\n")
	writeBullets(&b, suggested)
	return strings.TrimSpace(b.String())
}

func writeBullets(b *strings.Builder, paths []string) {
	if len(paths) == 0 {
		b.WriteString("- (none)\n")
		return
	}
	for _, p := range paths {
		fmt.Fprintf(b, "- `%s`\n", p)
	}
}

// Repository state lines, written into Context and read back by pickup.
const (
	repoStateHeading = "### Repository state (recorded by baton)"
	stateBranch      = "- branch: "
	stateHead        = "- HEAD: "
	stateDirty       = "- uncommitted: "
)

// repoState describes the git state of dir, or "" outside a repository.
// files are the packet's files (relative to the project root): in a work
// tree too large for a whole `git status`, they are what is checked. The
// store remembers HEAD's subject for the next handoff at the same commit.
func repoState(ctx context.Context, st *fsstore.Store, dir string, files []string) string {
	paths, asPacket := relativeTo(dir, st.Root(), files)
	repo := gitx.Open(dir)
	repo.Subjects = st
	snap, err := repo.Snapshot(ctx, paths...)
	if err != nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(repoStateHeading + "\n\n")
	branch := snap.Branch
	if branch == "" {
		branch = "(detached HEAD)"
	}
	fmt.Fprintf(&b, "%s`%s`\n", stateBranch, branch)
	if snap.Head.SHA != "" {
		fmt.Fprintf(&b, "%s`%s` %s\n", stateHead, snap.Head.Short(), snap.Head.Subject)
	} else {
		fmt.Fprintf(&b, "%s(no commits)\n", stateHead)
	}
	ours := workChanges(snap.Changes)
	switch {
	case snap.Partial && len(snap.Checked) == 0:
		fmt.Fprintf(&b, "%snot checked (the work tree tracks %d files; `git status` lists the changes)\n", stateDirty, snap.Tracked)
	case snap.Partial:
		what := "none"
		if len(ours) > 0 {
			what = fmt.Sprintf("%d", len(ours))
		}
		fmt.Fprintf(&b, "%s%s of the packet's %d file%s (the work tree tracks %d files; baton checked only the packet's)\n",
			stateDirty, what, len(snap.Checked), plural(len(snap.Checked)), snap.Tracked)
	case len(ours) == 0:
		fmt.Fprintf(&b, "%snone\n", stateDirty)
	default:
		fmt.Fprintf(&b, "%s%d file%s\n", stateDirty, len(ours), plural(len(ours)))
	}
	if len(ours) > 0 {
		for i, c := range ours {
			if p, ok := asPacket[c.Path]; ok {
				c.Path = p
			}
			if i == maxDirtyListed {
				fmt.Fprintf(&b, "  - … and %d more\n", len(ours)-maxDirtyListed)
				break
			}
			fmt.Fprintf(&b, "  - `%s` (%s)\n", c.Path, strings.TrimSpace(c.Status))
		}
	}
	return strings.TrimSpace(b.String())
}

// relativeTo turns files (relative to root, or absolute) into paths
// relative to dir, and maps each back to how the packet writes it.
func relativeTo(dir, root string, files []string) (paths []string, asPacket map[string]string) {
	asPacket = map[string]string{}
	base, err := filepath.Abs(dir)
	if err != nil {
		return nil, asPacket
	}
	for _, f := range files {
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, filepath.FromSlash(f))
		}
		if p, err := filepath.Rel(base, abs); err == nil {
			paths = append(paths, p)
			asPacket[p] = f
		}
	}
	return paths, asPacket
}

// workChanges drops the context store's own files: they are baton's
// bookkeeping, not the work.
func workChanges(cs []gitx.Change) []gitx.Change {
	var out []gitx.Change
	for _, c := range cs {
		if !strings.HasPrefix(c.Path, fsstore.Dir+"/") {
			out = append(out, c)
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fileExists reports whether the repo-relative path exists under root.
func fileExists(root, rel string) bool {
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, filepath.FromSlash(rel))
	}
	_, err := os.Stat(p)
	return err == nil
}
