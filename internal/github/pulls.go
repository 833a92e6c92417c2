package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

// DiffMediaType is the Accept header that makes GitHub answer the pull
// request endpoint with a unified diff instead of JSON.
const DiffMediaType = "application/vnd.github.diff"

func prOp(action string, repo Repo, number int) op {
	return op{action: action, what: fmt.Sprintf("pull request %s#%d", repo, number)}
}

// checkTarget validates a repository and an issue or pull request number
// before they go into a URL.
func checkTarget(repo Repo, number int) error {
	if err := repo.validate(); err != nil {
		return err
	}
	if number <= 0 {
		return baton.Errorf(baton.Invalid, "bad number %d for %s: want a positive issue or pull request number", number, repo)
	}
	return nil
}

// PullRequest fetches a pull request's metadata: title, body, state,
// author, head and base refs and SHAs, totals. One request.
func (c *Client) PullRequest(ctx context.Context, repo Repo, number int) (*PullRequest, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	var pr gh.PullRequest
	if _, err := c.get(ctx, fmt.Sprintf("repos/%s/%s/pulls/%d", repo.Owner, repo.Name, number), &pr, prOp("get", repo, number)); err != nil {
		return nil, err
	}
	return convertPR(repo, &pr), nil
}

// PullRequestFiles lists a pull request's changed files with their
// additions, deletions and patches. GitHub lists at most 3,000 files;
// compare with PullRequest.ChangedFiles to detect the cut. One request per
// 100 files (at least one).
func (c *Client) PullRequestFiles(ctx context.Context, repo Repo, number int) ([]File, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	var files []File
	path := fmt.Sprintf("repos/%s/%s/pulls/%d/files", repo.Owner, repo.Name, number)
	err := paginate(ctx, c, path, nil, prOp("list files of", repo, number), func(page []*gh.CommitFile) error {
		for _, f := range page {
			files = append(files, File{
				Path:         f.GetFilename(),
				PreviousPath: f.GetPreviousFilename(),
				Status:       f.GetStatus(),
				Additions:    f.GetAdditions(),
				Deletions:    f.GetDeletions(),
				Changes:      f.GetChanges(),
				Patch:        f.GetPatch(),
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// PullRequestDiff streams a pull request's unified diff (the diff media
// type on the pull request endpoint). The caller reads it as far as it
// needs and must Close it; nothing is buffered, so a 100 MB diff costs no
// memory here. Read errors are *baton.Error values (Unavailable for a cut
// connection). When GitHub refuses to render the diff (over 300 files or
// 20,000 lines) the error is Invalid and wraps ErrDiffTooLarge. One
// request.
func (c *Client) PullRequestDiff(ctx context.Context, repo Repo, number int) (io.ReadCloser, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	o := prOp("get the diff of", repo, number)
	req, err := c.gh.NewRequest(ctx, http.MethodGet, fmt.Sprintf("repos/%s/%s/pulls/%d", repo.Owner, repo.Name, number), nil)
	if err != nil {
		return nil, c.internal(o, err)
	}
	req.Header.Set("Accept", DiffMediaType)
	resp, err := c.gh.BareDo(req)
	if err != nil {
		return nil, c.classify(o, err)
	}
	return &diffReader{body: resp.Body, c: c, o: op{action: "read the diff of", what: o.what}}, nil
}

// diffReader maps read errors from the diff stream to *baton.Error.
type diffReader struct {
	body io.ReadCloser
	c    *Client
	o    op
}

func (d *diffReader) Read(p []byte) (int, error) {
	n, err := d.body.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, d.c.classify(d.o, err)
	}
	return n, err
}

func (d *diffReader) Close() error { return d.body.Close() }

// ClosingIssues lists the issues a pull request will close when merged
// (GraphQL closingIssuesReferences), with titles and URLs only. One request
// per 100 issues (at least one).
func (c *Client) ClosingIssues(ctx context.Context, repo Repo, number int) ([]LinkedIssue, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	type node struct {
		Number     int     `json:"number"`
		Title      string  `json:"title"`
		URL        string  `json:"url"`
		State      string  `json:"state"`
		Repository gqlRepo `json:"repository"`
	}
	type data struct {
		Repository *struct {
			PullRequest *struct {
				Refs connection[node] `json:"closingIssuesReferences"`
			} `json:"pullRequest"`
		} `json:"repository"`
	}
	issues := []LinkedIssue{}
	err := paginateGraphQL(ctx, c, prOp("list issues closed by", repo, number), queryClosingIssues,
		map[string]any{"owner": repo.Owner, "name": repo.Name, "number": number},
		func(d *data) *connection[node] {
			if d.Repository == nil || d.Repository.PullRequest == nil {
				return nil
			}
			return &d.Repository.PullRequest.Refs
		},
		func(n node) {
			issues = append(issues, LinkedIssue{
				Repo: n.Repository.repo(repo.Host), Number: n.Number, Title: n.Title, URL: n.URL,
				State: strings.ToLower(n.State),
			})
		})
	if err != nil {
		return nil, err
	}
	return issues, nil
}

// ReviewComments lists a pull request's inline review comments, oldest
// first. `gh pr view` omits these; a review brief needs them. One request
// per 100 comments (at least one).
func (c *Client) ReviewComments(ctx context.Context, repo Repo, number int) ([]ReviewComment, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	var out []ReviewComment
	path := fmt.Sprintf("repos/%s/%s/pulls/%d/comments", repo.Owner, repo.Name, number)
	err := paginate(ctx, c, path, nil, prOp("list review comments of", repo, number), func(page []*gh.PullRequestComment) error {
		for _, rc := range page {
			out = append(out, ReviewComment{
				ID:        rc.GetID(),
				ReviewID:  rc.GetPullRequestReviewID(),
				InReplyTo: rc.GetInReplyTo(),
				Author:    rc.GetUser().GetLogin(),
				Body:      rc.GetBody(),
				Path:      rc.GetPath(),
				Line:      rc.GetLine(),
				StartLine: rc.GetStartLine(),
				Side:      rc.GetSide(),
				CommitID:  rc.GetCommitID(),
				DiffHunk:  rc.GetDiffHunk(),
				URL:       rc.GetHTMLURL(),
				CreatedAt: rc.GetCreatedAt().Time,
				UpdatedAt: rc.GetUpdatedAt().Time,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NewPullRequest describes a pull request to open.
type NewPullRequest struct {
	Head  string // branch with the changes; "owner:branch" for a fork
	Base  string // branch to merge into
	Title string
	Body  string
	Draft bool
}

// CreatePullRequest opens a pull request. It returns Conflict when one is
// already open for the same head and base, and Invalid when GitHub rejects
// the branches (missing, or no commits between them). One request.
func (c *Client) CreatePullRequest(ctx context.Context, repo Repo, np NewPullRequest) (*PullRequest, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	if np.Head == "" || np.Base == "" || strings.TrimSpace(np.Title) == "" {
		return nil, baton.Errorf(baton.Invalid, "create pull request in %s: head, base and title are required", repo)
	}
	body := gh.CreatePullRequest{Title: &np.Title, Head: np.Head, Base: np.Base, Body: &np.Body, Draft: &np.Draft}
	var pr gh.PullRequest
	o := op{action: "create pull request", what: fmt.Sprintf("%s from %s into %s", repo, np.Head, np.Base)}
	if _, err := c.send(ctx, http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls", repo.Owner, repo.Name), body, &pr, o); err != nil {
		return nil, err
	}
	return convertPR(repo, &pr), nil
}

// MarkReadyForReview moves a draft pull request to ready for review
// (GraphQL markPullRequestReadyForReview). It reads the pull request first
// for its node id; if it is not a draft, nothing else is sent. Two
// requests, or one when the pull request is already ready.
func (c *Client) MarkReadyForReview(ctx context.Context, repo Repo, number int) error {
	pr, err := c.PullRequest(ctx, repo, number)
	if err != nil {
		return err
	}
	if !pr.Draft {
		return nil
	}
	var data struct {
		Mark *struct {
			PullRequest struct {
				IsDraft bool `json:"isDraft"`
			} `json:"pullRequest"`
		} `json:"markPullRequestReadyForReview"`
	}
	o := prOp("mark ready for review", repo, number)
	if err := c.graphql(ctx, o, mutationMarkReady, map[string]any{"id": pr.NodeID}, &data); err != nil {
		return err
	}
	if data.Mark == nil || data.Mark.PullRequest.IsDraft {
		return c.fail(baton.Internal, nil, o, "GitHub still reports a draft")
	}
	return nil
}

// ReviewEvent is the verdict of a submitted review.
type ReviewEvent string

// The review events GitHub accepts when submitting a review.
const (
	EventApprove        ReviewEvent = "APPROVE"
	EventRequestChanges ReviewEvent = "REQUEST_CHANGES"
	EventComment        ReviewEvent = "COMMENT"
)

// NewReview is a review to submit.
type NewReview struct {
	Event ReviewEvent
	// Body is sent as a JSON field, never through a shell. Required for
	// EventRequestChanges and EventComment.
	Body string
	// CommitID pins the review to the head SHA that was reviewed; GitHub
	// uses the current head when empty.
	CommitID string
	// Comments are the review's line comments, each on a line of the
	// pull request's diff: GitHub refuses the whole review (Invalid)
	// when one names a line the diff does not show.
	Comments []LineComment
}

// LineComment is a review's comment on one line of a pull request's
// diff: Line is the file's line on Side, RIGHT (the change's side, the
// default) or LEFT (the base's).
type LineComment struct {
	Path string
	Line int
	Side string
	Body string
}

// CreateReview submits a review. It returns Invalid for a bad event, a
// missing body, or GitHub's refusal (such as approving one's own pull
// request). One request.
func (c *Client) CreateReview(ctx context.Context, repo Repo, number int, nr NewReview) (*Review, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	o := prOp("review", repo, number)
	switch nr.Event {
	case EventApprove:
	case EventRequestChanges, EventComment:
		if strings.TrimSpace(nr.Body) == "" {
			return nil, c.fail(baton.Invalid, nil, o, "a %s review needs a body", nr.Event)
		}
	default:
		return nil, c.fail(baton.Invalid, nil, o, "bad review event %q: want APPROVE, REQUEST_CHANGES or COMMENT", nr.Event)
	}
	event := string(nr.Event)
	req := &gh.PullRequestReviewRequest{Event: &event}
	if nr.Body != "" {
		req.Body = &nr.Body
	}
	if nr.CommitID != "" {
		req.CommitID = &nr.CommitID
	}
	for _, lc := range nr.Comments {
		if lc.Path == "" || lc.Line < 1 || strings.TrimSpace(lc.Body) == "" {
			return nil, c.fail(baton.Invalid, nil, o, "a line comment needs a path, a line from 1 and a body")
		}
		side := lc.Side
		if side == "" {
			side = "RIGHT"
		}
		req.Comments = append(req.Comments, &gh.DraftReviewComment{Path: gh.Ptr(lc.Path), Line: gh.Ptr(lc.Line), Side: gh.Ptr(side), Body: gh.Ptr(lc.Body)})
	}
	var r gh.PullRequestReview
	if _, err := c.send(ctx, http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls/%d/reviews", repo.Owner, repo.Name, number), req, &r, o); err != nil {
		return nil, err
	}
	return &Review{
		ID:          r.GetID(),
		Author:      r.GetUser().GetLogin(),
		Body:        r.GetBody(),
		State:       r.GetState(),
		CommitID:    r.GetCommitID(),
		URL:         r.GetHTMLURL(),
		SubmittedAt: r.GetSubmittedAt().Time,
	}, nil
}

// MergeMethod is how a pull request's commits land on the base branch.
type MergeMethod string

// The merge methods GitHub offers.
const (
	mergeSquash MergeMethod = "squash" // the default here
	MergeCommit MergeMethod = "merge"
	MergeRebase MergeMethod = "rebase"
)

// MergeOptions tunes Merge. The zero value squashes.
type MergeOptions struct {
	Method MergeMethod
	// SHA, when set, makes GitHub refuse the merge (409, Conflict) if the
	// head moved since it was checked: merge exactly what was verified.
	SHA           string
	CommitTitle   string
	CommitMessage string
}

// Merge merges a pull request, squashing by default. It returns Conflict
// when GitHub refuses (405: not mergeable, a draft, checks required) or the
// head changed (409). One request.
func (c *Client) Merge(ctx context.Context, repo Repo, number int, mo MergeOptions) (*MergeResult, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	o := prOp("merge", repo, number)
	method := mo.Method
	if method == "" {
		method = mergeSquash
	}
	switch method {
	case mergeSquash, MergeCommit, MergeRebase:
	default:
		return nil, c.fail(baton.Invalid, nil, o, "bad merge method %q: want squash, merge or rebase", method)
	}
	body := struct {
		CommitTitle   string `json:"commit_title,omitempty"`
		CommitMessage string `json:"commit_message,omitempty"`
		SHA           string `json:"sha,omitempty"`
		MergeMethod   string `json:"merge_method"`
	}{mo.CommitTitle, mo.CommitMessage, mo.SHA, string(method)}
	var res gh.PullRequestMergeResult
	if _, err := c.send(ctx, http.MethodPut, fmt.Sprintf("repos/%s/%s/pulls/%d/merge", repo.Owner, repo.Name, number), body, &res, o); err != nil {
		return nil, err
	}
	return &MergeResult{SHA: res.GetSHA(), Merged: res.GetMerged(), Message: res.GetMessage()}, nil
}

// convertPR maps go-github's pull request to ours.
func convertPR(repo Repo, pr *gh.PullRequest) *PullRequest {
	out := &PullRequest{
		Repo:           repo,
		Number:         pr.GetNumber(),
		NodeID:         pr.GetNodeID(),
		Title:          pr.GetTitle(),
		Body:           pr.GetBody(),
		State:          pr.GetState(),
		Draft:          pr.GetDraft(),
		Merged:         pr.GetMerged(),
		Mergeable:      pr.Mergeable,
		MergeableState: pr.GetMergeableState(),
		Author:         pr.GetUser().GetLogin(),
		URL:            pr.GetHTMLURL(),
		Head:           convertBranch(repo, pr.GetHead()),
		Base:           convertBranch(repo, pr.GetBase()),
		Additions:      pr.GetAdditions(),
		Deletions:      pr.GetDeletions(),
		ChangedFiles:   pr.GetChangedFiles(),
		Commits:        pr.GetCommits(),
		Comments:       pr.GetComments(),
		ReviewComments: pr.GetReviewComments(),
		MergeCommitSHA: pr.GetMergeCommitSHA(),
		CreatedAt:      pr.GetCreatedAt().Time,
		UpdatedAt:      pr.GetUpdatedAt().Time,
		MergedAt:       pr.GetMergedAt().Time,
		ClosedAt:       pr.GetClosedAt().Time,
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// convertBranch maps a head or base. A deleted fork has no repo; the
// branch then keeps the pull request's repository's host and an empty name.
func convertBranch(repo Repo, b *gh.PullRequestBranch) Branch {
	br := Branch{Ref: b.GetRef(), SHA: b.GetSHA(), Repo: Repo{Host: repo.Host}}
	if r := b.GetRepo(); r != nil {
		br.Repo.Owner = r.GetOwner().GetLogin()
		br.Repo.Name = r.GetName()
	}
	return br
}
