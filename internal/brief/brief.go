package brief

import (
	"context"
	"errors"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/prompt"
)

// ReviewRequest is a review brief to fetch and build.
type ReviewRequest struct {
	// GitHub opens the API client for the repository Repo names.
	GitHub github.Opener
	Repo   github.OpenRequest
	Number int
	// DiffBudget bounds the diff text in bytes; 0 means DefaultDiffBudget.
	DiffBudget int64
	// Pack sets the prompt's budgets (budget.Parse); a zero
	// BudgetBytes means DiffBudget + ReviewBudgetExtra.
	Pack prompt.Options
	// Fetch says where a large diff spools.
	Fetch FetchOptions
}

// Review fetches a pull request's deterministic context and renders its
// review brief, all or nothing: the one call behind `baton review-pr`,
// the MCP review_pr_brief tool and the review-pr prompt. The request is
// checked before anything is opened or fetched; an error from reading
// GitHub satisfies IsFetchError.
func Review(ctx context.Context, req ReviewRequest) (*ReviewBrief, error) {
	if req.Number <= 0 {
		return nil, baton.Errorf(baton.Invalid, "a pull request number is a whole number above 0 (got %d)", req.Number)
	}
	if req.DiffBudget < 0 {
		return nil, baton.Errorf(baton.Invalid, "a diff budget of %d: give a positive number of bytes, or 0 for the default", req.DiffBudget)
	}
	t, err := github.Open(ctx, req.GitHub, req.Repo)
	if err != nil {
		return nil, err
	}
	rv, err := fetchReview(ctx, t.Client, t.Repo, req.Number, req.Fetch)
	if err != nil {
		return nil, &fetchError{err}
	}
	defer rv.Close()
	opts := ReviewOptions{DiffBudget: req.DiffBudget, Pack: req.Pack}
	if t.Named {
		opts.RepoArg = t.Repo.String()
	}
	b, err := buildReview(rv, opts)
	if err != nil {
		return nil, err
	}
	b.Repo, b.Context = t.Repo, rv
	return b, nil
}

// IssueRequest is a fix-issue or implement-feature brief to build.
type IssueRequest struct {
	Task Task
	// GitHub opens the API client for the repository Repo names; only
	// used when Number is set.
	GitHub github.Opener
	Repo   github.OpenRequest
	// Number is the issue; 0 for implement-feature from Request.
	Number  int
	Request string
	// Comments is how many of the issue's most recent comments to fetch,
	// 0 to MaxComments.
	Comments int
	// Store gives the relevant files; nil for none.
	Store *fsstore.Store
	// Pack sets the prompt's budgets (budget.Parse); a zero
	// BudgetBytes means DefaultIssueBudgetBytes.
	Pack prompt.Options
}

// Issue builds a fix-issue or implement-feature brief, fetching the issue
// first when it names one, all or nothing: the one call behind the CLI
// commands, the MCP tools and the prompts of the same names. The request
// is checked before anything is opened or fetched; an error from reading
// GitHub satisfies IsFetchError.
func Issue(ctx context.Context, req IssueRequest) (*IssueBrief, error) {
	request := strings.TrimSpace(req.Request)
	switch {
	case req.Task != FixIssue && req.Task != ImplementFeature:
		return nil, baton.Errorf(baton.Invalid, "unknown brief %q: want fix-issue or implement-feature", req.Task)
	case req.Comments < 0 || req.Comments > maxComments:
		return nil, baton.Errorf(baton.Invalid, "the number of comments must be between 0 and %d (got %d)", maxComments, req.Comments)
	case req.Number < 0:
		return nil, baton.Errorf(baton.Invalid, "an issue number is a whole number above 0 (got %d)", req.Number)
	case req.Number > 0 && request != "":
		return nil, baton.Errorf(baton.Invalid, "give an issue or a request in words, not both")
	case req.Number == 0 && req.Task == FixIssue:
		return nil, baton.Errorf(baton.Invalid, "fix-issue needs an issue: a number such as 7, #7 or an issue URL")
	case req.Number == 0 && request == "":
		return nil, baton.Errorf(baton.Invalid, "implement-feature needs an issue (a number or URL) or the request in words")
	}
	in := IssueBriefInput{Task: req.Task, Request: req.Request, CommentsAsked: req.Comments}
	var repo github.Repo
	if req.Number > 0 {
		t, err := github.Open(ctx, req.GitHub, req.Repo)
		if err != nil {
			return nil, err
		}
		if in.Issue, err = fetchIssue(ctx, t.Client, t.Repo, req.Number, req.Comments); err != nil {
			return nil, &fetchError{err}
		}
		if t.Named {
			in.RepoArg = t.Repo.String()
		}
		repo = t.Repo
	}
	skipped := 0
	if req.Store != nil {
		var err error
		if in.RelevantFiles, skipped, err = storeFiles(req.Store, relevantFilesInBrief); err != nil {
			return nil, err
		}
	}
	b, err := buildIssueBrief(in, req.Pack)
	if err != nil {
		return nil, err
	}
	b.Input, b.Repo, b.SkippedLines = in, repo, skipped
	return b, nil
}

// fetchError marks a failure to read GitHub, as opposed to a request that
// was wrong; it reads as its cause.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// IsFetchError says whether err came from reading GitHub (unreachable,
// refused, not found there) rather than from the request itself, for an
// edge that answers the two differently (the CLI's exit codes).
func IsFetchError(err error) bool {
	var f *fetchError
	return errors.As(err, &f)
}
