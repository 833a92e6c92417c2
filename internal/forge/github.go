package forge

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
)

// GitHub is a repository on GitHub, through internal/github. The work ref
// is a draft pull request; verdicts are posted as pull request reviews;
// verify waits for the head's check runs and commit statuses; deploy marks
// the draft ready and merges through the API.
//
// Reviews are posted with the COMMENT event, the verdict in the body:
// baton opens the pull request with the same identity that reviews it,
// and GitHub refuses APPROVE and REQUEST_CHANGES on one's own pull
// request.
type GitHub struct {
	// Client talks to the repository's API as a token or a GitHub App
	// installation; git pushes with the same credential.
	Client *github.Client
	Repo   github.Repo
	// RemoteURL overrides the git remote (default
	// https://HOST/OWNER/NAME.git), e.g. for a mirror or a test.
	RemoteURL string
	// Now is the clock for waiting; nil means time.Now.
	Now func() time.Time
}

var _ Forge = (*GitHub)(nil)

// Remote implements Forge. The token (an App installation's current one,
// or the person's) travels in git's environment as an extra HTTP header
// for the host, never in the URL or argv, so no git error message can
// show it.
func (g *GitHub) Remote(ctx context.Context, _ *baton.Delivery) (string, []string, error) {
	host := g.Repo.Host
	if host == "" {
		host = github.DefaultHost
	}
	url := g.RemoteURL
	if url == "" {
		url = fmt.Sprintf("https://%s/%s/%s.git", host, g.Repo.Owner, g.Repo.Name)
	}
	tok, err := g.Client.Token(ctx)
	if err != nil {
		return "", nil, err
	}
	var env []string
	if t := tok.Value(); t != "" {
		basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + t))
		env = []string{
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.https://" + host + "/.extraheader",
			"GIT_CONFIG_VALUE_0=AUTHORIZATION: basic " + basic,
			"GIT_TERMINAL_PROMPT=0",
		}
	}
	return url, env, nil
}

// prNumber reads the pull request number from a work ref of type pr.
func prNumber(d *baton.Delivery) (int, bool) {
	r, ok := d.Ref(baton.RoleWork, "pr")
	if !ok {
		return 0, false
	}
	i := strings.LastIndex(r.URL, "/pull/")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimRight(r.URL[i+len("/pull/"):], "/"))
	return n, err == nil && n > 0
}

// OpenWork implements Forge: a draft pull request from the work branch,
// as the delivery's draft setting says. With auto (the default), a
// repository that has no drafts (a private one on GitHub Free or Pro)
// gets a ready pull request instead, which deploy then merges without
// marking it ready. When one is already open (a plan that runs again),
// the stored ref is kept.
func (g *GitHub) OpenWork(ctx context.Context, d *baton.Delivery, base, title, body string) (baton.Ref, error) {
	mode := d.Config.Draft
	np := github.NewPullRequest{Head: d.WorkBranch(), Base: base, Title: title, Body: body, Draft: mode != baton.DraftNever}
	pr, err := g.Client.CreatePullRequest(ctx, g.Repo, np)
	if errors.Is(err, github.ErrDraftsUnsupported) {
		if mode == baton.DraftAlways {
			return baton.Ref{}, baton.WrapError(baton.Invalid, err, "%s has no draft pull requests and the delivery's draft setting is always: set draft to auto or never", g.Repo)
		}
		np.Draft = false
		pr, err = g.Client.CreatePullRequest(ctx, g.Repo, np)
	}
	if err != nil {
		if old, ok := d.Ref(baton.RoleWork, "pr"); ok && baton.ErrorCode(err) == baton.Conflict {
			return old, nil
		}
		return baton.Ref{}, err
	}
	return baton.Ref{Role: baton.RoleWork, Type: "pr", Label: fmt.Sprintf("%s#%d", g.Repo, pr.Number), URL: pr.URL}, nil
}

// PostReview implements Forge: a pull request review (COMMENT) with the
// verdict, its line notes as the review's line comments, or, before a
// pull request exists, a comment on the request issue. A review whose
// line comments GitHub cannot place (a line the pull request's diff
// does not show) is posted again without them: its body lists them all.
func (g *GitHub) PostReview(ctx context.Context, d *baton.Delivery, v Review, _ string) ([]baton.Ref, error) {
	if n, ok := prNumber(d); ok {
		if r, err := g.postedReview(ctx, n, v); err != nil || r != nil {
			if err != nil {
				return nil, err
			}
			return g.reviewRefs(ctx, n, v, r.ID, r.URL, len(v.Lines) > 0), nil
		}
		nr := github.NewReview{Event: github.EventComment, Body: v.Body()}
		for _, l := range v.Lines {
			nr.Comments = append(nr.Comments, github.LineComment{Path: l.Path, Line: l.Line, Body: l.Body})
		}
		r, err := g.Client.CreateReview(ctx, g.Repo, n, nr)
		if err != nil && len(nr.Comments) > 0 && baton.ErrorCode(err) == baton.Invalid {
			nr.Comments = nil
			r, err = g.Client.CreateReview(ctx, g.Repo, n, nr)
		}
		if err != nil {
			return nil, err
		}
		return g.reviewRefs(ctx, n, v, r.ID, r.URL, len(nr.Comments) > 0), nil
	}
	if n, ok := issueNumber(d); ok {
		if c, err := g.postedComment(ctx, n, v); err != nil || c != nil {
			if err != nil {
				return nil, err
			}
			return append([]baton.Ref{{Role: baton.RoleReview, Type: "issue_comment", Label: v.label(), URL: c.URL}}, LineRefs(v, c.URL, nil)...), nil
		}
		c, err := g.Client.CreateComment(ctx, g.Repo, n, v.Body())
		if err != nil {
			return nil, err
		}
		return append([]baton.Ref{{Role: baton.RoleReview, Type: "issue_comment", Label: v.label(), URL: c.URL}}, LineRefs(v, c.URL, nil)...), nil
	}
	return nil, baton.Errorf(baton.NotFound, "delivery %s has no pull request or issue to post to", d.ID)
}

// reviewRefs are the refs of review id on pull request n: the review's,
// then one per line note, at its line comment when it has them.
func (g *GitHub) reviewRefs(ctx context.Context, n int, v Review, id int64, url string, lines bool) []baton.Ref {
	var urls []string
	if lines {
		urls = g.commentURLs(ctx, n, id)
	}
	return append([]baton.Ref{{Role: baton.RoleReview, Type: "pr_review", Label: v.label(), URL: url}}, LineRefs(v, url, urls)...)
}

// postedReview is the review of pull request n that already carries v's
// key, nil when none does (or v has no key).
func (g *GitHub) postedReview(ctx context.Context, n int, v Review) (*github.Review, error) {
	k := v.keyMarker()
	if k == "" {
		return nil, nil
	}
	page, _, err := g.Client.Reviews(ctx, g.Repo, n, nil)
	if err != nil {
		return nil, err
	}
	for i := range page.Reviews {
		if strings.Contains(page.Reviews[i].Body, k) {
			return &page.Reviews[i], nil
		}
	}
	return nil, nil
}

// postedComment is the comment on issue n that already carries v's key,
// nil when none does (or v has no key).
func (g *GitHub) postedComment(ctx context.Context, n int, v Review) (*github.Comment, error) {
	k := v.keyMarker()
	if k == "" {
		return nil, nil
	}
	cs, err := g.Client.IssueComments(ctx, g.Repo, n)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		if strings.Contains(cs[i].Body, k) {
			return &cs[i], nil
		}
	}
	return nil, nil
}

// commentURLs are the URLs of review id's line comments on pull request
// n, in the order they were posted; none when they cannot be read (the
// review's own URL shows them).
func (g *GitHub) commentURLs(ctx context.Context, n int, id int64) []string {
	all, err := g.Client.ReviewComments(ctx, g.Repo, n)
	if err != nil {
		return nil
	}
	var urls []string
	for _, c := range all {
		if c.ReviewID == id {
			urls = append(urls, c.URL)
		}
	}
	return urls
}

func issueNumber(d *baton.Delivery) (int, bool) {
	r, ok := d.Ref(baton.RoleRequest, "github_issue")
	if !ok {
		return 0, false
	}
	ref, err := github.ParseIssueURL(r.URL)
	return ref.Number, err == nil
}

// Checks implements Forge: it polls the check runs and statuses of sha
// until none is pending, or wait.Timeout passes (then the pending ones
// are reported), or no check appears within wait.Appear.
func (g *GitHub) Checks(ctx context.Context, d *baton.Delivery, sha string, wait CheckWait) (CheckResult, bool, error) {
	now := g.Now
	if now == nil {
		now = time.Now
	}
	if wait.Poll <= 0 {
		wait.Poll = 15 * time.Second
	}
	start := now()
	for {
		sum, err := g.Client.Checks(ctx, g.Repo, sha)
		if err != nil {
			return CheckResult{}, true, err
		}
		// baton's own statuses report its phases (verify's among them),
		// not CI. Only its exact names: a workflow that calls a job
		// "baton/lint" is CI like any other.
		sum.Checks = slices.DeleteFunc(sum.Checks, func(c github.Check) bool { return isPhaseStatus(c.Name) })
		res := CheckResult{Total: len(sum.Checks)}
		for _, c := range sum.Failing() {
			res.Failed = append(res.Failed, baton.Ref{Role: baton.RoleCheck, Type: string(c.Kind), Label: c.Name + ": " + firstNonEmpty(c.Conclusion, c.Status), URL: c.URL})
		}
		for _, c := range sum.Pending() {
			res.Pending = append(res.Pending, c.Name)
		}
		elapsed := now().Sub(start)
		switch {
		case len(sum.Checks) == 0 && elapsed >= wait.Appear:
			return res, true, nil // no CI reports on this head
		case len(sum.Checks) > 0 && len(res.Pending) == 0:
			return res, true, nil
		case wait.Timeout > 0 && elapsed >= wait.Timeout:
			return res, true, nil
		}
		t := time.NewTimer(wait.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, true, ctx.Err()
		case <-t.C:
		}
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Merge implements Forge: the draft is marked ready for review, then
// merged through the API at exactly the verified sha.
func (g *GitHub) Merge(ctx context.Context, d *baton.Delivery, _ *Workspaces, base, sha string, method baton.MergeMethod) (baton.Ref, error) {
	n, ok := prNumber(d)
	if !ok {
		return baton.Ref{}, baton.Errorf(baton.Invalid, "delivery %s has no pull request to merge: retry plan to open one", d.ID)
	}
	if err := g.Client.MarkReadyForReview(ctx, g.Repo, n); err != nil {
		return baton.Ref{}, err
	}
	res, err := g.Client.Merge(ctx, g.Repo, n, github.MergeOptions{
		Method: github.MergeMethod(methodName(method)), SHA: sha,
		CommitTitle: fmt.Sprintf("%s (#%d)", d.Title(), n), CommitMessage: "Delivered by baton (delivery " + d.ID + ").",
	})
	if err != nil {
		return baton.Ref{}, err
	}
	if !res.Merged {
		return baton.Ref{}, baton.Errorf(baton.Conflict, "GitHub did not merge %s#%d: %s", g.Repo, n, res.Message)
	}
	short := res.SHA
	if len(short) > 12 {
		short = short[:12]
	}
	host := g.Repo.Host
	if host == "" {
		host = github.DefaultHost
	}
	return baton.Ref{Role: baton.RoleWork, Type: "commit", Label: fmt.Sprintf("merged into %s as %s (%s)", base, short, methodName(method)),
		URL: fmt.Sprintf("https://%s/%s/commit/%s", host, g.Repo, res.SHA)}, nil
}

var _ Reporter = (*GitHub)(nil)

// ReportPhase implements Reporter: on the work pull request's current
// head, a commit status "baton/<phase>", or with a GitHub App a check run
// of that name (created once per head, then updated). Two requests: the
// pull request, then the status or check run. A phase that moved the head
// while it ran (implement pushes) ends on the head it started from too,
// where its start left a pending status or an in-progress check run: a
// third request.
func (g *GitHub) ReportPhase(ctx context.Context, d *baton.Delivery, rep PhaseReport) (PhaseReport, bool, error) {
	n, ok := prNumber(d)
	if !ok {
		return rep, false, nil
	}
	pr, err := g.Client.PullRequest(ctx, g.Repo, n)
	if err != nil {
		return rep, false, err
	}
	name := StatusPrefix + string(rep.Phase)
	// The head the phase started on, when it ends on another.
	startHead := ""
	if rep.HeadSHA != "" && rep.HeadSHA != pr.Head.SHA && rep.State != string(github.CheckPending) {
		startHead = rep.HeadSHA
	}
	movedOn := fmt.Sprintf("%s (the work moved on to %s)", rep.Description, shortSHA(pr.Head.SHA))
	if g.Client.Installation() == nil {
		st := github.NewStatus{State: github.CheckState(rep.State), Context: name, TargetURL: rep.TargetURL, Description: rep.Description}
		err := g.Client.CreateStatus(ctx, g.Repo, pr.Head.SHA, st)
		if startHead != "" {
			st.Description = movedOn
			err = errors.Join(err, g.Client.CreateStatus(ctx, g.Repo, startHead, st))
		}
		rep.HeadSHA = pr.Head.SHA
		return rep, err == nil, err
	}
	run := github.NewCheckRun{Name: name, DetailsURL: rep.TargetURL, Title: rep.Description, Summary: rep.Summary, Status: "in_progress"}
	if rep.State != string(github.CheckPending) {
		run.Status, run.Conclusion = "completed", rep.State
	}
	if rep.CheckRunID != 0 && rep.HeadSHA == pr.Head.SHA {
		err := g.Client.UpdateCheckRun(ctx, g.Repo, rep.CheckRunID, run)
		return rep, err == nil, err
	}
	var endErr error
	if startHead != "" && rep.CheckRunID != 0 {
		old := run
		old.Title = movedOn
		endErr = g.Client.UpdateCheckRun(ctx, g.Repo, rep.CheckRunID, old)
	}
	run.HeadSHA = pr.Head.SHA
	id, err := g.Client.CreateCheckRun(ctx, g.Repo, run)
	if err != nil {
		return rep, false, errors.Join(err, endErr)
	}
	rep.HeadSHA, rep.CheckRunID = pr.Head.SHA, id
	return rep, endErr == nil, endErr
}

// shortSHA is the 7 characters of a commit GitHub shows.
func shortSHA(sha string) string { return sha[:min(7, len(sha))] }

// Comment implements Reporter: an issue comment on the work pull request.
func (g *GitHub) Comment(ctx context.Context, d *baton.Delivery, body string) (bool, error) {
	n, ok := prNumber(d)
	if !ok {
		return false, nil
	}
	if _, err := g.Client.CreateComment(ctx, g.Repo, n, body); err != nil {
		return false, err
	}
	return true, nil
}

// isPhaseStatus reports whether name is that of a status baton posts for
// a phase (StatusPrefix and the phase).
func isPhaseStatus(name string) bool {
	p, ok := strings.CutPrefix(name, StatusPrefix)
	return ok && slices.Contains(baton.Phases, baton.Phase(p))
}
