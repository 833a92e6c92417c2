package brief

import (
	"fmt"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/prompt"
)

// DefaultDiffBudget is the seed's diff cap: 50 KB.
const DefaultDiffBudget = 50 << 10

// reviewBudgetExtra is what a review brief's prompt budget adds to its
// diff budget by default: room for the body (at most MaxBodyBytes), the
// file list (at most 16 KB), the list of cut files (at most 4 KB), the
// linked issues and the fixed text, so that by default only the diff
// budget cuts anything.
const reviewBudgetExtra = 48 << 10

// ReviewOptions tunes BuildReview.
type ReviewOptions struct {
	// DiffBudget bounds the diff text in bytes; 0 means DefaultDiffBudget.
	DiffBudget int64
	// Pack sets the prompt's budgets. A zero BudgetBytes means DiffBudget
	// + ReviewBudgetExtra. When the whole prompt does not fit, the diff
	// gives way first: it is cut to the largest allowance that lets every
	// other section stay.
	Pack prompt.Options
	// RepoArg, when set ("owner/name"), is added as --repo to the
	// commands the brief suggests. Set it when the repository was named on
	// the command line rather than found in the agent's checkout.
	RepoArg string
}

// ReviewBrief is a rendered review brief.
type ReviewBrief struct {
	Pack *prompt.Pack
	Diff DiffReport
	// Repo and Context are what Review fetched it from (Context's diff
	// spool already released); BuildReview leaves them unset.
	Repo    github.Repo
	Context *ReviewContext
}

// DiffReport says what the diff budget kept.
type DiffReport struct {
	// Source is DiffFromAPI or DiffFromPatches.
	Source string `json:"source"`
	// BudgetBytes is the diff budget asked for; AllowanceBytes what the
	// diff was cut to, smaller when the prompt budget needed room.
	BudgetBytes    int64            `json:"budget_bytes"`
	AllowanceBytes int64            `json:"allowance_bytes"`
	TotalBytes     int64            `json:"total_bytes"`
	ShownBytes     int64            `json:"shown_bytes"`
	Truncated      bool             `json:"truncated"`
	Files          []DiffFileReport `json:"files"`
}

// DiffFileReport is one file of the diff and what the brief shows of it.
type DiffFileReport struct {
	DiffFile
	Bytes int64 `json:"bytes"`
	FileExcerpt
}

// buildReview renders the review-pr brief for r. It makes no requests.
func buildReview(r *ReviewContext, opts ReviewOptions) (*ReviewBrief, error) {
	budget := opts.DiffBudget
	if budget == 0 {
		budget = DefaultDiffBudget
	}
	if budget < 0 {
		return nil, baton.Errorf(baton.Invalid, "the diff budget must not be negative (got %d)", budget)
	}
	po := opts.Pack
	if po.BudgetBytes == 0 {
		po.BudgetBytes = int(budget) + reviewBudgetExtra
	}
	pr := r.PR
	n := pr.Number
	repoArg := repoFlag(opts.RepoArg)
	secs := []prompt.Section{
		{Key: keyTask, Body: fmt.Sprintf("## Task: Review PR #%d", n), Bookend: true},
		{Key: keyContext, Heading: "### Context", Required: true, Body: r.contextBody(repoArg)},
		{Key: keyLinked, DropRank: rankLinked, Body: r.linkedBody()},
		{Key: keyFiles, Required: true, Body: r.filesBody(repoArg)},
		{Key: keyDiff, Required: true}, // filled per allowance
		{Key: keyTools, Heading: "### Tools That Help", DropRank: rankTools, Body: fmt.Sprintf(
			"- `gh pr view %[1]d%[2]s` — metadata, body, status\n"+
				"- `gh issue view <number>%[2]s` — full issue details if needed\n"+
				"- `read <path>` — examine specific files beyond the diff\n"+
				"- `gh pr diff %[1]d%[2]s` — re-fetch diff if needed", n, repoArg)},
		{Key: keyDone, Heading: "### Definition of Done", Bookend: true, Body: reviewDone},
		oodaSection(fmt.Sprintf("When ready, write the review to a file and post it with `baton github review %d%s --event approve|request-changes|comment --body-file <file>`. "+
			"It shows the review, where it goes and as which account, and posts only when I press Enter; Escape cancels. "+
			"If I cancel, I'll tell you what's on my mind, you revise, and we iterate until aligned. "+
			"(Without a terminal it refuses unless given `--yes`: add that only after I have approved the exact review here.)", n, repoArg)),
	}
	const diffAt = 4
	var buildErr error
	build := func(allow int64) (*prompt.Pack, error) {
		ex, err := excerptDiff(r.Diff, r.spool, allow)
		if err != nil {
			buildErr = err
			return nil, err
		}
		secs[diffAt].Body = r.diffBody(ex, repoArg)
		return prompt.Build(secs, po)
	}
	// Byte budgets are measured without rendering, so the search can be
	// exact; a token budget tokenizes the prompt per try, so it settles
	// for 1% of the diff budget.
	step := int64(1)
	if po.BudgetTokens > 0 && po.Tokens != nil {
		step = max(budget/100, 1)
	}
	pack, allow, err := fitLargest(budget, step, build)
	if buildErr != nil {
		return nil, fmt.Errorf("cut the diff of %s#%d: %w", r.Repo, n, buildErr)
	}
	if err != nil {
		return nil, err
	}
	ex, err := excerptDiff(r.Diff, r.spool, allow)
	if err != nil {
		return nil, fmt.Errorf("cut the diff of %s#%d: %w", r.Repo, n, err)
	}
	rep := DiffReport{
		Source: r.DiffSource, BudgetBytes: budget, AllowanceBytes: allow, TotalBytes: r.Diff.Size,
		ShownBytes: ex.Used, Truncated: ex.Truncated(), Files: make([]DiffFileReport, len(r.Diff.Files)),
	}
	for i, f := range r.Diff.Files {
		rep.Files[i] = DiffFileReport{DiffFile: f, Bytes: f.Size(), FileExcerpt: ex.Files[i]}
	}
	return &ReviewBrief{Pack: pack, Diff: rep}, nil
}

const reviewDone = `A good review follows this structure:

1. **Verdict**: Lead with the outcome
2. **Understanding**: Show we get the point of this PR — the author should see we understood before we critique
3. **What we like**: Call out what works well
4. **Questions**: Things we're curious about or want clarified
5. **Nits**: Minor suggestions, take-or-leave`

// prState is "open", "open (draft)", "merged" or "closed".
func prState(pr *github.PullRequest) string {
	switch {
	case pr.Merged:
		return "merged"
	case pr.Draft && pr.State == "open":
		return "open (draft)"
	}
	return pr.State
}

func (r *ReviewContext) contextBody(repoArg string) string {
	pr := r.PR
	head := pr.Head.Ref
	if o := pr.Head.Repo.Owner; o != "" && !strings.EqualFold(o, r.Repo.Owner) {
		head = o + ":" + head
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Title:** %s\n", oneLine(pr.Title))
	fmt.Fprintf(&b, "**Author:** %s\n", pr.Author)
	fmt.Fprintf(&b, "**State:** %s\n", prState(pr))
	fmt.Fprintf(&b, "**Branch:** %s → %s\n", head, pr.Base.Ref)
	if pr.URL != "" {
		fmt.Fprintf(&b, "**URL:** %s\n", pr.URL)
	}
	fmt.Fprintf(&b, "\n**Body:**\n%s", body(pr.Body, fmt.Sprintf("gh pr view %d%s", pr.Number, repoArg)))
	return b.String()
}

// oneLine keeps a title on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ref names an issue or pull request: "#7" in the same repository,
// "owner/name#7" in another.
func ref(base, in github.Repo, number int) string {
	if in.Owner == "" || strings.EqualFold(in.Owner, base.Owner) && strings.EqualFold(in.Name, base.Name) {
		return fmt.Sprintf("#%d", number)
	}
	return fmt.Sprintf("%s#%d", in, number)
}

func (r *ReviewContext) linkedBody() string {
	if len(r.LinkedIssues) == 0 {
		return "**Linked Issues:** (none)"
	}
	var b strings.Builder
	b.WriteString("**Linked Issues:**")
	for _, is := range r.LinkedIssues {
		fmt.Fprintf(&b, "\n- %s: %s (%s)", ref(r.Repo, is.Repo, is.Number), oneLine(is.Title), is.URL)
	}
	return b.String()
}

// classNote is how a file list names a class.
func classNote(c FileClass) string {
	switch c {
	case classGenerated:
		return "generated"
	case classVendored:
		return "vendored"
	case classLock:
		return "lock file"
	}
	return ""
}

func (r *ReviewContext) filesBody(repoArg string) string {
	pr := r.PR
	changed := pr.ChangedFiles
	if changed < len(r.Files) {
		changed = len(r.Files)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Files Changed:**\n%s, %s(+), %s(-)",
		plural(changed, "file changed", "files changed"), plural(pr.Additions, "insertion", "insertions"), plural(pr.Deletions, "deletion", "deletions"))
	if len(r.Files) < changed {
		fmt.Fprintf(&b, "\n(GitHub lists only the first %d of them.)", len(r.Files))
	}
	if len(r.Files) > 0 {
		b.WriteString("\n")
	}
	binary := map[string]bool{}
	for _, f := range r.Diff.Files {
		if f.Binary {
			binary[f.Path] = true
		}
	}
	listed := 0
	for _, f := range r.Files {
		var notes []string
		if binary[f.Path] {
			notes = append(notes, "binary")
		}
		switch f.Status {
		case "added", "removed":
			notes = append(notes, f.Status)
		case "renamed", "copied":
			notes = append(notes, f.Status+" from "+f.PreviousPath)
		}
		if c := classNote(classify(f.Path, false)); c != "" {
			notes = append(notes, c)
		}
		line := fmt.Sprintf("\n- %s (+%d -%d", f.Path, f.Additions, f.Deletions)
		if len(notes) > 0 {
			line += ", " + strings.Join(notes, ", ")
		}
		line += ")"
		if b.Len()+len(line) > maxFileListBytes {
			break
		}
		b.WriteString(line)
		listed++
	}
	if listed < len(r.Files) {
		fmt.Fprintf(&b, "\n- … and %d more (`gh pr diff %d%s --name-only` lists every file)", len(r.Files)-listed, pr.Number, repoArg)
	}
	return b.String()
}

func (r *ReviewContext) diffBody(ex *Excerpt, repoArg string) string {
	n := r.PR.Number
	var b strings.Builder
	b.WriteString("**Diff:**\n")
	if r.DiffSource == diffFromPatches {
		b.WriteString("(GitHub will not render a diff this large, so this one is rebuilt from each file's patch; files GitHub gives no patch for, binary or very large, show their header only.)\n")
	}
	if len(r.Diff.Files) == 0 {
		b.WriteString("(empty: the pull request changes no lines)")
		return b.String()
	}
	f := prompt.Fence(ex.Text)
	b.WriteString(f + "diff\n")
	b.WriteString(ex.Text)
	if ex.Text != "" && !strings.HasSuffix(ex.Text, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(f)
	if !ex.Truncated() {
		return b.String()
	}
	fmt.Fprintf(&b, "\n\n[Diff truncated at %s. Use 'read <path>' for specific files.]\n", kb(ex.Budget))
	fmt.Fprintf(&b, "`gh pr diff %d%s` prints the whole diff.", n, repoArg)
	r.writeCutList(&b, ex, repoArg)
	return b.String()
}

// writeCutList lists the files the diff budget cut short or left out,
// cut ones first, within maxCutListBytes.
func (r *ReviewContext) writeCutList(b *strings.Builder, ex *Excerpt, repoArg string) {
	start := b.Len()
	total, listed := 0, 0
	for _, pass := range []Outcome{cut, omitted} {
		first := true
		for i, f := range r.Diff.Files {
			fe := ex.Files[i]
			if fe.Outcome != pass {
				continue
			}
			total++
			var line string
			if first {
				if pass == cut {
					line = "\n\nCut short (the first lines are above):"
				} else {
					line = "\n\nNot shown:"
				}
			}
			var notes []string
			if pass == cut {
				notes = append(notes, fmt.Sprintf("%d of %d lines shown", fe.ShownLines-f.HeaderLines, f.Lines-f.HeaderLines))
			}
			if f.Binary {
				notes = append(notes, "binary")
			}
			if c := classNote(f.Class); c != "" {
				notes = append(notes, c)
			}
			line += "\n- " + f.Path
			if len(notes) > 0 {
				line += " (" + strings.Join(notes, ", ") + ")"
			}
			if b.Len()-start+len(line) > maxCutListBytes {
				continue
			}
			first = false
			b.WriteString(line)
			listed++
		}
	}
	if listed < total {
		fmt.Fprintf(b, "\n- … and %d more (`gh pr diff %d%s --name-only` lists every file)", total-listed, r.PR.Number, repoArg)
	}
}
