package brief

import (
	"context"
	"fmt"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/prompt"
)

// Task names a brief built from an issue or a request.
type Task string

// The issue-based task types.
const (
	FixIssue         Task = "fix-issue"
	ImplementFeature Task = "implement-feature"
)

// DefaultComments is how many of an issue's most recent comments a brief
// shows by default; maxComments is the most it will fetch (one page).
const (
	DefaultComments = 10
	maxComments     = 100
)

// defaultIssueBudgetBytes is the default prompt budget of fix-issue and
// implement-feature: the body (at most MaxBodyBytes), ten comments (at
// most MaxCommentBytes each), the linked pull requests, the relevant files
// and the fixed text fit without a cut.
const defaultIssueBudgetBytes = 64 << 10

// IssueContext is the deterministic context of an issue: its metadata, its
// most recent comments and the pull requests that close it.
type IssueContext struct {
	Repo      github.Repo
	Issue     *github.Issue
	LinkedPRs []github.LinkedPullRequest
}

// fetchIssue reads an issue with its most recent comments and the
// pull requests that will close it, all or nothing. The two reads run
// concurrently: with comments <= 100 that is 2 to 4 requests (the issue,
// up to two pages of comments, one GraphQL query). A number that names a
// pull request is an Invalid error that points to review-pr.
func fetchIssue(ctx context.Context, c *github.Client, repo github.Repo, number, comments int) (*IssueContext, error) {
	if comments < 0 || comments > maxComments {
		return nil, baton.Errorf(baton.Invalid, "the number of comments must be between 0 and %d (got %d)", maxComments, comments)
	}
	ic := &IssueContext{Repo: repo}
	err := all(ctx, false,
		func(ctx context.Context) (err error) {
			ic.Issue, err = c.Issue(ctx, repo, number, github.IssueOptions{RecentComments: comments})
			return err
		},
		func(ctx context.Context) (err error) {
			ic.LinkedPRs, err = c.ClosingPullRequests(ctx, repo, number)
			return err
		},
	)
	// A pull request number fails the GraphQL issue lookup; say what was
	// meant rather than "not found".
	if ic.Issue != nil && ic.Issue.IsPullRequest {
		return nil, baton.Errorf(baton.Invalid, "%s#%d is a pull request, not an issue: run `baton review-pr %d`", repo, number, number)
	}
	if err != nil {
		return nil, err
	}
	return ic, nil
}

// RelevantFile is a file the context store ranks as relevant.
type RelevantFile struct {
	Path      string `json:"path"`
	Confirmed bool   `json:"confirmed"`
}

// IssueBriefInput is what BuildIssueBrief renders.
type IssueBriefInput struct {
	Task Task
	// Issue is the fetched issue; nil for implement-feature from a
	// free-text Request.
	Issue   *IssueContext
	Request string
	// CommentsAsked is how many recent comments were fetched, for the note
	// on omitted older ones.
	CommentsAsked int
	// RelevantFiles come from the context store, most relevant first.
	RelevantFiles []RelevantFile
	// RepoArg, when set, is added as --repo to suggested commands.
	RepoArg string
}

// IssueBrief is a rendered fix-issue or implement-feature brief.
type IssueBrief struct {
	Pack *prompt.Pack
	// CommentsShown is how many comments the prompt kept (the newest).
	CommentsShown int
	// Input and Repo are what Issue built it from (Repo is zero without
	// an issue); SkippedLines counts the store's relevant-files log lines
	// that could not be read. BuildIssueBrief leaves them unset.
	Input        IssueBriefInput
	Repo         github.Repo
	SkippedLines int
}

// buildIssueBrief renders a fix-issue or implement-feature brief. It
// makes no requests. A zero opts.BudgetBytes means
// DefaultIssueBudgetBytes. When the prompt does not fit, the oldest
// comments go first, then the sections in drop order.
func buildIssueBrief(in IssueBriefInput, opts prompt.Options) (*IssueBrief, error) {
	if opts.BudgetBytes == 0 {
		opts.BudgetBytes = defaultIssueBudgetBytes
	}
	switch in.Task {
	case FixIssue, ImplementFeature:
	default:
		return nil, baton.Errorf(baton.Invalid, "unknown brief %q: want fix-issue or implement-feature", in.Task)
	}
	if in.Issue == nil && (in.Task == FixIssue || strings.TrimSpace(in.Request) == "") {
		return nil, baton.Errorf(baton.Invalid, "%s needs an issue or a request", in.Task)
	}
	repoArg := repoFlag(in.RepoArg)
	title := "Fix Issue"
	if in.Task == ImplementFeature {
		title = "Implement Feature"
	}
	heading := "## Task: " + title
	number := 0
	if in.Issue != nil {
		number = in.Issue.Issue.Number
		heading += fmt.Sprintf(" #%d", number)
	}
	secs := []prompt.Section{
		{Key: keyTask, Body: heading, Bookend: true},
		{Key: keyContext, Heading: "### Context", Required: true},
	}
	var comments []github.Comment
	if in.Issue != nil {
		secs[1].Body = in.Issue.contextBody(repoArg)
		secs = append(secs,
			prompt.Section{Key: keyLinked, DropRank: rankLinked, Body: in.Issue.linkedBody()},
			prompt.Section{Key: keyComments, DropRank: rankComments},
		)
		comments = in.Issue.Issue.Comments
	} else {
		secs[1].Body = "**Request:**\n" + strings.TrimSpace(in.Request)
	}
	secs = append(secs,
		prompt.Section{Key: keyRelevant, DropRank: rankRelevant, Body: relevantBody(in.RelevantFiles)},
		prompt.Section{Key: keyTools, Heading: "### Tools That Help", DropRank: rankTools, Body: issueTools(in.Task, number, repoArg)},
		prompt.Section{Key: keyDone, Heading: "### Definition of Done", Bookend: true, Body: issueDone(in.Task)},
		oodaSection(issueDecide(in.Task, number, repoArg)),
	)
	if in.Issue == nil {
		pack, err := prompt.Build(secs, opts)
		if err != nil {
			return nil, err
		}
		return &IssueBrief{Pack: pack}, nil
	}
	const commentsAt = 3
	pack, kept, err := fitLargest(int64(len(comments)), 1, func(k int64) (*prompt.Pack, error) {
		secs[commentsAt].Body = in.Issue.commentsBody(comments[len(comments)-int(k):], in.CommentsAsked, number, repoArg)
		return prompt.Build(secs, opts)
	})
	if err != nil {
		return nil, err
	}
	return &IssueBrief{Pack: pack, CommentsShown: int(kept)}, nil
}

func (ic *IssueContext) contextBody(repoArg string) string {
	is := ic.Issue
	var b strings.Builder
	fmt.Fprintf(&b, "**Title:** %s\n", oneLine(is.Title))
	fmt.Fprintf(&b, "**Author:** %s\n", is.Author)
	state := is.State
	if is.StateReason != "" && is.State == "closed" {
		state += " (" + strings.ReplaceAll(is.StateReason, "_", " ") + ")"
	}
	fmt.Fprintf(&b, "**State:** %s\n", state)
	labels := "(none)"
	if len(is.Labels) > 0 {
		labels = strings.Join(is.Labels, ", ")
	}
	fmt.Fprintf(&b, "**Labels:** %s\n", labels)
	if is.URL != "" {
		fmt.Fprintf(&b, "**URL:** %s\n", is.URL)
	}
	fmt.Fprintf(&b, "\n**Body:**\n%s", body(is.Body, fmt.Sprintf("gh issue view %d%s", is.Number, repoArg)))
	return b.String()
}

func (ic *IssueContext) linkedBody() string {
	if len(ic.LinkedPRs) == 0 {
		return "**Linked Pull Requests:** (none)"
	}
	var b strings.Builder
	b.WriteString("**Linked Pull Requests:**")
	for _, pr := range ic.LinkedPRs {
		state := pr.State
		if pr.Draft && state == "open" {
			state = "open, draft"
		}
		fmt.Fprintf(&b, "\n- %s: %s (%s, %s)", ref(ic.Repo, pr.Repo, pr.Number), oneLine(pr.Title), state, pr.URL)
	}
	return b.String()
}

// commentsBody renders the given comments (the newest ones, oldest first)
// and says how many older ones are not shown.
func (ic *IssueContext) commentsBody(shown []github.Comment, asked, number int, repoArg string) string {
	total := ic.Issue.CommentCount
	if total == 0 {
		return "**Comments:** (none)"
	}
	if len(shown) == 0 {
		if asked == 0 {
			return fmt.Sprintf("**Comments:** %s, not fetched (`gh issue view %d%s --comments` shows them)", plural(total, "comment", "comments"), number, repoArg)
		}
		return fmt.Sprintf("**Comments:** %s, none shown to fit the budget (`gh issue view %d%s --comments` shows them)", plural(total, "comment", "comments"), number, repoArg)
	}
	var b strings.Builder
	if len(shown) < total {
		recent := fmt.Sprintf("the %d most recent", len(shown))
		if len(shown) == 1 {
			recent = "the most recent"
		}
		fmt.Fprintf(&b, "**Comments** (%s of %d; `gh issue view %d%s --comments` shows the older ones):", recent, total, number, repoArg)
	} else {
		fmt.Fprintf(&b, "**Comments** (%d):", total)
	}
	for _, c := range shown {
		fmt.Fprintf(&b, "\n\n**@%s** on %s:\n", c.Author, c.CreatedAt.UTC().Format("2006-01-02"))
		text := strings.TrimSpace(c.Body)
		if cut, ok := cutText(text, maxCommentBytes); ok {
			text = cut + fmt.Sprintf("\n[Comment truncated at %s: %s]", kb(maxCommentBytes), c.URL)
		}
		if text == "" {
			text = "(empty)"
		}
		b.WriteString(quoteLines(text))
	}
	return b.String()
}

func relevantBody(files []RelevantFile) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("**Relevant Files** (from the context store, most relevant first):")
	for _, f := range files {
		b.WriteString("\n- " + f.Path)
		if f.Confirmed {
			b.WriteString(" (confirmed)")
		}
	}
	return b.String()
}

func issueTools(t Task, number int, repoArg string) string {
	var b strings.Builder
	if number > 0 {
		fmt.Fprintf(&b, "- `gh issue view %d%s --comments` — the issue with every comment\n", number, repoArg)
		fmt.Fprintf(&b, "- `gh pr view <number>%s` — a linked pull request\n", repoArg)
	}
	b.WriteString("- `read <path>`, `grep` — the code involved\n")
	b.WriteString("- `git log -p -- <path>` — how that code got this way\n")
	b.WriteString("- `baton files` — the files agents touched recently in this project")
	return b.String()
}

const fixDone = `1. **Reproduce first**: show the bug with a failing test, or a command and its output, before changing any code
2. **Root cause**: explain why it happens, not only where
3. **Regression test**: a test that fails before the fix and passes after it
4. **The fix**: the smallest change that removes the cause, with no unrelated edits
5. **Validators**: the project's tests, vet and linters pass; report the commands you ran and what they printed`

const featureDone = `1. **Acceptance understood**: restate what done looks like (the issue's acceptance criteria, or ones we agree here) before writing code
2. **Small slices**: build it in small steps that each leave the build and the tests green
3. **Tests**: the new behaviour is covered by tests, edge cases and failure paths included
4. **Docs**: user-facing changes are documented (help text, README, docs/)
5. **Validators**: the project's tests, vet and linters pass; report the commands you ran and what they printed`

func issueDone(t Task) string {
	if t == FixIssue {
		return fixDone
	}
	return featureDone
}

func issueDecide(t Task, number int, repoArg string) string {
	var s string
	if t == FixIssue {
		s = "Before you change code, state the root cause and the fix you propose, with the test that will prove it. I'll confirm, challenge, or narrow; iterate until aligned, then implement."
	} else {
		s = "Before you write code, restate the acceptance criteria and propose the first small slice. I'll confirm, challenge, or narrow; iterate until aligned, then build it slice by slice."
	}
	if number > 0 {
		s += fmt.Sprintf(" To post on the issue, write the comment to a file and run `baton github comment %d%s --body-file <file>`: it shows the comment and as which account, and posts only when I press Enter (without a terminal it refuses unless given `--yes`, which you add only after I have approved the exact text here).", number, repoArg)
	}
	return s
}
