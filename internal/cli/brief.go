package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/brief"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/prompt/budget"
)

// briefOptions are the flags shared by the brief commands.
type briefOptions struct {
	gh           githubFlags
	budget       int
	budgetTokens int
	diffBudget   int
	comments     int
	explain      bool
	asJSON       bool
}

func (o *briefOptions) registerCommon(cmd *cobra.Command, defaultBudget string) {
	o.gh.register(cmd)
	fl := cmd.Flags()
	sizeVar(fl, &o.budget, "budget", 0, "the whole prompt's size limit: `SIZE` in bytes or with a unit, 40KB, 40KiB (default "+defaultBudget+")")
	fl.IntVar(&o.budgetTokens, "budget-tokens", 0, "also limit the prompt to `N` o200k_base tokens (counted offline)")
	fl.BoolVar(&o.explain, "explain", false, "report kept, dropped and truncated sections on stderr")
	fl.BoolVar(&o.asJSON, "json", false, "print the prompt, its report and the fetched facts as JSON")
}

// fetchFailed makes a failure to reach or read GitHub exit 1, whatever
// its code: exit 2 is kept for what the user typed wrong, which is checked
// before any request.
func fetchFailed(err error) error {
	if err == nil || exitCode(err) != ExitUsage {
		return err
	}
	return &ExitCodeError{Code: ExitError, Err: err}
}

func newReviewPRCmd(f *Factory) *cobra.Command {
	var o briefOptions
	cmd := &cobra.Command{
		Use:   "review-pr <number>",
		Short: "Print the brief for reviewing a pull request",
		Long: `Fetch a pull request's deterministic context and print it as a review brief:
the task, the pull request (title, author, state, branch, body), the issues it
closes, the changed files with their totals, the diff, the tools that help, a
Definition of Done for a review, and how the conversation goes (OODA).

Everything is fetched before anything is printed, in 4 requests for a pull
request with at most 100 files (one more per further 100 files). If any
request fails, baton prints one error on stderr, nothing on stdout, and exits
1: never a partial brief.

The diff is streamed and cut to --diff-budget bytes (50 KB) at line
boundaries: first every file's header and first hunk (a large first hunk gets
a fair share), normal files before generated, vendored and lock files; then
the rest of each file. A notice says how to read the rest and lists the files
cut short or left out. The whole prompt fits --budget bytes (default: the
diff budget + 48 KB); when it would not, the diff gives way first.

The repository is --repo, or the origin remote of the project (--root, else
the working directory's); the number may also be a pull request URL. The token comes from GH_TOKEN or
GITHUB_TOKEN, else ` + "`gh auth token`" + `. The prompt goes to stdout, for a slash
command's !-injection or a pipe into any agent; baton never reads stdin here.`,
		Example: `  baton review-pr 24
  baton review-pr https://github.com/octo/app/pull/24
  baton review-pr 24 --repo octo/app --diff-budget 20000 --explain
  claude "$(baton review-pr 24)"`,
		Args: exactArgs(1, "a pull request number, #number or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReviewPR(cmd.Context(), f, args[0], o)
		},
	}
	o.registerCommon(cmd, "--diff-budget + 49152")
	sizeVar(cmd.Flags(), &o.diffBudget, "diff-budget", brief.DefaultDiffBudget, "the diff's size limit: `SIZE` in bytes or with a unit (40KB, 40KiB)")
	return cmd
}

func runReviewPR(ctx context.Context, f *Factory, arg string, o briefOptions) error {
	number, fromURL, ok := github.ParseNumber(arg, "pull", "pulls")
	if !ok {
		return usageError("review-pr takes a pull request number, such as 24, #24 or a pull request URL (got %q)", arg)
	}
	opts, err := budget.Parse(o.budget, o.budgetTokens)
	if err != nil {
		return err
	}
	b, err := brief.Review(ctx, brief.ReviewRequest{GitHub: f.GitHub, Repo: f.openRequest(o.gh, fromURL), Number: number,
		DiffBudget: int64(o.diffBudget), Pack: opts})
	if err != nil {
		return gitHubFailed(err)
	}
	if o.explain {
		writeExplain(f.IO.Err, b.Pack.Report)
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, reviewJSON(b))
	}
	_, err = io.WriteString(f.IO.Out, b.Pack.Text)
	return err
}

func newFixIssueCmd(f *Factory) *cobra.Command {
	var o briefOptions
	cmd := &cobra.Command{
		Use:   "fix-issue <number>",
		Short: "Print the brief for fixing an issue",
		Long: `Fetch an issue's deterministic context and print it as a bug-fix brief: the
issue (title, author, state, labels, body), the pull requests that will close
it, its most recent comments (--comments, with the total and a note when older
ones are left out), the files the context store ranks as relevant, the tools
that help, a Definition of Done for a fix (reproduce first, root cause, a
regression test, the fix, validators) and the OODA framing.

Everything is fetched before anything is printed: 2 requests, plus up to two
for the comments. Any failure prints one error on stderr, nothing on stdout,
and exits 1. The prompt fits --budget bytes (default 65536); the oldest
comments give way first.`,
		Example: `  baton fix-issue 7
  baton fix-issue '#7' --comments 30
  baton fix-issue https://github.com/octo/app/issues/7 --json`,
		Args: exactArgs(1, "an issue number, #number or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIssueBrief(cmd.Context(), f, brief.FixIssue, args, o)
		},
	}
	o.registerCommon(cmd, "65536")
	cmd.Flags().IntVar(&o.comments, "comments", brief.DefaultComments, "how many of the most recent comments to include, `N` from 0 to 100")
	return cmd
}

func newImplementFeatureCmd(f *Factory) *cobra.Command {
	var o briefOptions
	cmd := &cobra.Command{
		Use:   "implement-feature <number|text...>",
		Short: "Print the brief for implementing a feature",
		Long: `Print a feature brief. Given an issue number (or #number, or URL) it fetches
the issue like fix-issue does; given anything else, the words are the request
and nothing is fetched: no GitHub, no token.

The brief carries the request, the files the context store ranks as relevant,
the tools that help, a Definition of Done for a feature (acceptance
understood, small slices, tests, docs, validators) and the OODA framing.
Failures print one error on stderr, nothing on stdout, and exit 1.`,
		Example: `  baton implement-feature 42
  baton implement-feature "add a --dry-run flag to baton install"
  baton implement-feature 42 --comments 0 --budget 20000`,
		Args: minArgs(1, "an issue number, #number, URL, or the request as text"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIssueBrief(cmd.Context(), f, brief.ImplementFeature, args, o)
		},
	}
	o.registerCommon(cmd, "65536")
	cmd.Flags().IntVar(&o.comments, "comments", brief.DefaultComments, "how many of the most recent comments to include, `N` from 0 to 100")
	return cmd
}

func runIssueBrief(ctx context.Context, f *Factory, task brief.Task, args []string, o briefOptions) error {
	opts, err := budget.Parse(o.budget, o.budgetTokens)
	if err != nil {
		return err
	}
	req := brief.IssueRequest{Task: task, GitHub: f.GitHub, Comments: o.comments, Store: f.Store(), Pack: opts}
	number, fromURL, isNumber := 0, (*github.Repo)(nil), false
	if len(args) == 1 {
		number, fromURL, isNumber = github.ParseNumber(args[0], "issues")
	}
	switch {
	case isNumber:
		req.Number, req.Repo = number, f.openRequest(o.gh, fromURL)
	case task == brief.FixIssue:
		return usageError("fix-issue takes an issue number, such as 7, #7 or an issue URL (got %q)", strings.Join(args, " "))
	default:
		req.Request = strings.Join(args, " ")
	}
	b, err := brief.Issue(ctx, req)
	if err != nil {
		return gitHubFailed(err)
	}
	if b.SkippedLines > 0 {
		f.warnf("skipped %d unreadable line(s) in %s", b.SkippedLines, fsstore.RelevantFilesLog)
	}
	if o.explain {
		writeExplain(f.IO.Err, b.Pack.Report)
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, issueJSON(b))
	}
	_, err = io.WriteString(f.IO.Out, b.Pack.Text)
	return err
}

// warnf prints a warning on stderr.
func (f *Factory) warnf(format string, args ...any) {
	fmt.Fprintf(f.IO.Err, "baton: warning: "+format+"\n", args...)
}
