// Package forge is where a delivery's repository lives, as the phase
// runner sees it: a git remote to fetch from and push to, a place to show
// the work (a draft pull request, or the branch itself), somewhere to post
// review verdicts, CI checks to wait for, and a way to merge.
//
// Two forges implement it: Local (a git repository on this machine: the
// work ref is the branch, reviews are notes kept by baton, there is no CI,
// deploy merges into the source repository without touching the user's
// uncommitted changes) and GitHub (on internal/github: a draft pull
// request, PR reviews, check runs and statuses, merges through the API).
//
// Workspaces keeps one bare cache per repository under the data directory
// and a worktree per delivery in it, so no run clones the repository
// again, and most phases reuse a worktree instead of checking one out.
package forge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Forge is what the phase runner needs from where a repository lives.
type Forge interface {
	// Remote is the git URL (or path) to fetch from and push to, and the
	// environment git needs for it (credentials go here, never in argv).
	// It is asked again before each push: a GitHub App's token lives an
	// hour, and a phase may run longer.
	Remote(ctx context.Context, d *baton.Delivery) (url string, env []string, err error)
	// OpenWork shows the pushed work branch for review: a draft pull
	// request on GitHub, the branch itself locally. It returns the work
	// ref.
	OpenWork(ctx context.Context, d *baton.Delivery, base, title, body string) (baton.Ref, error)
	// PostReview publishes a verdict where the next implement run will
	// see it, and returns its review ref, then one ref per line note
	// (v.Lines, LineRefs) where that note can be read. noteURL is where
	// baton keeps its own copy (a file URL); the local forge returns it.
	PostReview(ctx context.Context, d *baton.Delivery, v Review, noteURL string) ([]baton.Ref, error)
	// Checks waits for the CI of sha (the work branch head) to finish and
	// reports it. ok=false means the forge has no CI at all (local).
	Checks(ctx context.Context, d *baton.Delivery, sha string, wait CheckWait) (res CheckResult, ok bool, err error)
	// Merge lands the work branch (at sha, as verified) on base with
	// method and returns a ref to the result.
	Merge(ctx context.Context, d *baton.Delivery, ws *Workspaces, base, sha string, method baton.MergeMethod) (baton.Ref, error)
}

// Review is a verdict to post.
type Review struct {
	Verdict  baton.Verdict `json:"verdict"`
	Summary  string        `json:"summary"`
	Feedback string        `json:"feedback"`
	// Author is who gave it: "reviewer agent (claude)", or a person for a
	// reject reason.
	Author string `json:"author"`
	// Reject marks a person's reject reason rather than an agent verdict.
	Reject bool `json:"reject,omitempty"`
	// Lines are a reject's notes on lines of the change or the plan:
	// listed in the body, and on GitHub also posted as the review's line
	// comments. Feedback holds them as baton.FormatLineNotes writes them.
	Lines []baton.LineNote `json:"lines,omitempty"`
	// Key names the stored note the review publishes ("<delivery>/<note
	// id>"), unseen in GitHub's rendering: a forge that finds a review
	// carrying it already posted returns that one instead of posting it
	// again, so a post retried after a crash is posted once.
	Key string `json:"key,omitempty"`
}

// keyMarker is how Body carries r.Key, "" without one.
func (r Review) keyMarker() string {
	if r.Key == "" {
		return ""
	}
	return "<!-- baton-note " + r.Key + " -->"
}

// label names the review in its ref.
func (r Review) label() string {
	if r.Reject {
		return "rejected by " + r.Author
	}
	return "review: " + string(r.Verdict)
}

// Marker ends everything baton posts on GitHub (reviews, reject
// reasons), unseen in GitHub's rendering: intake never acts on a comment
// carrying it, so a reason that mentions baton cannot send a delivery
// back by itself.
const Marker = "<!-- baton -->"

// Body renders the review as markdown, ending in Marker.
func (r Review) Body() string {
	head := fmt.Sprintf("**baton review: %s**", r.Verdict)
	if r.Reject {
		head = "**baton: rejected by " + r.Author + "**"
	}
	body := head + "\n\n"
	if r.Summary != "" {
		body += r.Summary + "\n\n"
	}
	switch {
	case len(r.Lines) > 0:
		body += "### On lines\n\n"
		for _, n := range r.Lines {
			body += "- " + codeSpan(n.Where()) + ": " + strings.ReplaceAll(n.Body, "\n", "\n  ") + "\n"
		}
	case r.Feedback != "":
		body += "### Feedback\n\n" + r.Feedback + "\n"
	}
	if !r.Reject {
		body += "\n_" + r.Author + "_\n"
	}
	if k := r.keyMarker(); k != "" {
		body += "\n" + k
	}
	return body + "\n" + Marker + "\n"
}

// LineRefs are the refs of review r's line notes, the i-th at urls[i]
// (at url when urls has none for it): review_line refs labelled
// path:line, which the next prompt lists with their place.
func LineRefs(r Review, url string, urls []string) []baton.Ref {
	refs := make([]baton.Ref, len(r.Lines))
	for i, n := range r.Lines {
		u := url
		if i < len(urls) && urls[i] != "" {
			u = urls[i]
		}
		refs[i] = baton.Ref{Role: baton.RoleReview, Type: baton.RefReviewLine, Label: n.Where(), URL: u}
	}
	return refs
}

// codeSpan is s as a markdown code span, fenced with one more backtick
// than the longest run in s.
func codeSpan(s string) string {
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// CheckWait bounds waiting for CI.
type CheckWait struct {
	Timeout time.Duration // give up waiting for running checks
	// Appear is how long to wait for a first check to be reported; after
	// it, a head with no checks at all has no CI.
	Appear time.Duration
	Poll   time.Duration
}

// CheckResult is the CI outcome of a commit.
type CheckResult struct {
	Total  int
	Failed []baton.Ref // check refs: one per failed check, name and URL
	// Pending is set when checks were still running at the timeout.
	Pending []string
}

// StatusPrefix starts the name of every commit status and check run baton
// publishes ("baton/review"): verify leaves them out of the CI it waits
// for, as they report baton's own phases.
const StatusPrefix = "baton/"

// PhaseReport is a phase's state as published on the work pull request's
// head.
type PhaseReport struct {
	Phase baton.Phase
	// State is pending, success or failure.
	State string
	// Description is one line ("review: not_pass"); Summary is markdown
	// (the phase log), shown by a check run.
	Description string
	Summary     string
	// TargetURL is the delivery's dashboard page ("" when the server has
	// no public URL).
	TargetURL string
	// HeadSHA and CheckRunID are what the last report went to, for the
	// next to update: a check run on the same head is updated in place.
	HeadSHA    string
	CheckRunID int64
}

// Reporter is a forge that shows phases where the work is reviewed: on
// GitHub, a commit status per phase (any token), or a check run when baton
// acts as a GitHub App. Local has none.
type Reporter interface {
	// ReportPhase publishes rep and returns it as published (HeadSHA and
	// CheckRunID set); ok is false when there is nowhere to publish yet
	// (no pull request).
	ReportPhase(ctx context.Context, d *baton.Delivery, rep PhaseReport) (out PhaseReport, ok bool, err error)
	// Comment posts body (markdown, ending in Marker) on the work pull
	// request's conversation: what a phase wants a reviewer to see beside
	// its status, such as the connections its agent's box refused. ok is
	// false when there is no pull request yet.
	Comment(ctx context.Context, d *baton.Delivery, body string) (ok bool, err error)
}
