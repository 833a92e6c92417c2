package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

func issueOp(action string, repo Repo, number int) op {
	return op{action: action, what: fmt.Sprintf("issue %s#%d", repo, number)}
}

// IssueOptions tunes Issue.
type IssueOptions struct {
	// RecentComments is how many of the most recent conversation comments
	// to fetch (0: none). The total is always in Issue.CommentCount.
	RecentComments int
}

// Issue fetches an issue: title, body, state, labels, author, and the
// RecentComments most recent comments, oldest first. The number may name a
// pull request (IsPullRequest is then set). With no comments asked for, it
// is the cheap way to check whether an issue was closed upstream.
//
// Requests: one, plus the comment pages that hold the most recent
// comments: with RecentComments <= 100 at most two more, none when the
// issue has no comments. Comments added between the requests may shift
// the window by a few; the result is still the newest ones read.
func (c *Client) Issue(ctx context.Context, repo Repo, number int, opts IssueOptions) (*Issue, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	if opts.RecentComments < 0 {
		return nil, baton.Errorf(baton.Invalid, "get issue %s#%d: RecentComments must not be negative", repo, number)
	}
	var is gh.Issue
	if _, err := c.get(ctx, fmt.Sprintf("repos/%s/%s/issues/%d", repo.Owner, repo.Name, number), &is, issueOp("get", repo, number)); err != nil {
		return nil, err
	}
	out := convertIssue(repo, &is)
	if opts.RecentComments == 0 || out.CommentCount == 0 {
		return out, nil
	}
	comments, err := c.recentComments(ctx, repo, number, out.CommentCount, opts.RecentComments)
	if err != nil {
		return nil, err
	}
	out.Comments = comments
	return out, nil
}

// recentComments fetches the last n of total comments by reading only the
// pages (of 100, oldest first) that hold them: the list endpoint has no
// "newest first" order.
func (c *Client) recentComments(ctx context.Context, repo Repo, number, total, n int) ([]Comment, error) {
	start := max(total-n, 0)
	first, last := start/perPage+1, (total-1)/perPage+1
	o := issueOp("list comments of", repo, number)
	var got []Comment
	for page := first; page <= last; page++ {
		q := url.Values{"per_page": {strconv.Itoa(perPage)}, "page": {strconv.Itoa(page)}}
		var batch []*gh.IssueComment
		if _, err := c.get(ctx, fmt.Sprintf("repos/%s/%s/issues/%d/comments?%s", repo.Owner, repo.Name, number, q.Encode()), &batch, o); err != nil {
			return nil, err
		}
		for _, ic := range batch {
			got = append(got, convertComment(ic))
		}
		if len(batch) < perPage {
			break // comments were deleted meanwhile; nothing further
		}
	}
	if len(got) > n {
		got = got[len(got)-n:]
	}
	return got, nil
}

// IssueComments lists every conversation comment on an issue or pull
// request, oldest first. One request per 100 comments (at least one).
func (c *Client) IssueComments(ctx context.Context, repo Repo, number int) ([]Comment, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	var out []Comment
	path := fmt.Sprintf("repos/%s/%s/issues/%d/comments", repo.Owner, repo.Name, number)
	err := paginate(ctx, c, path, nil, issueOp("list comments of", repo, number), func(page []*gh.IssueComment) error {
		for _, ic := range page {
			out = append(out, convertComment(ic))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClosingPullRequests lists the pull requests that will close an issue when
// merged, open, closed or merged (GraphQL closedByPullRequestsReferences
// with includeClosedPrs). This is GitHub's own "Development" link: a PR
// whose body says "Fixes #N", or one linked in the sidebar. Mere mentions
// (timeline cross-references) are not included. One request per 100 pull
// requests (at least one).
func (c *Client) ClosingPullRequests(ctx context.Context, repo Repo, number int) ([]LinkedPullRequest, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	type node struct {
		Number     int     `json:"number"`
		Title      string  `json:"title"`
		URL        string  `json:"url"`
		State      string  `json:"state"`
		IsDraft    bool    `json:"isDraft"`
		Repository gqlRepo `json:"repository"`
	}
	type data struct {
		Repository *struct {
			Issue *struct {
				Refs connection[node] `json:"closedByPullRequestsReferences"`
			} `json:"issue"`
		} `json:"repository"`
	}
	prs := []LinkedPullRequest{}
	err := paginateGraphQL(ctx, c, issueOp("list pull requests closing", repo, number), queryClosingPullRequests,
		map[string]any{"owner": repo.Owner, "name": repo.Name, "number": number},
		func(d *data) *connection[node] {
			if d.Repository == nil || d.Repository.Issue == nil {
				return nil
			}
			return &d.Repository.Issue.Refs
		},
		func(n node) {
			prs = append(prs, LinkedPullRequest{
				Repo: n.Repository.repo(repo.Host), Number: n.Number, Title: n.Title, URL: n.URL,
				State: strings.ToLower(n.State), Draft: n.IsDraft,
			})
		})
	if err != nil {
		return nil, err
	}
	return prs, nil
}

// IssueFilter selects issues for ListIssues.
type IssueFilter struct {
	// State is "open" (default), "closed" or "all".
	State string
	// Labels keeps issues that carry every one of these labels.
	Labels []string
}

// ListIssues lists a repository's issues, newest first, without comments.
// Pull requests, which GitHub's issue list includes, are left out. One
// request per 100 items (pull requests count), at least one.
func (c *Client) ListIssues(ctx context.Context, repo Repo, f IssueFilter) ([]Issue, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	state := f.State
	switch state {
	case "":
		state = "open"
	case "open", "closed", "all":
	default:
		return nil, baton.Errorf(baton.Invalid, "list issues of %s: bad state %q: want open, closed or all", repo, f.State)
	}
	q := url.Values{"state": {state}}
	if len(f.Labels) > 0 {
		for _, l := range f.Labels {
			if strings.Contains(l, ",") {
				return nil, baton.Errorf(baton.Invalid, "list issues of %s: label %q contains a comma, which GitHub's filter cannot express", repo, l)
			}
		}
		q.Set("labels", strings.Join(f.Labels, ","))
	}
	o := op{action: "list issues of", what: repo.String()}
	var out []Issue
	err := paginate(ctx, c, fmt.Sprintf("repos/%s/%s/issues", repo.Owner, repo.Name), q, o, func(page []*gh.Issue) error {
		for _, is := range page {
			if is.IsPullRequest() {
				continue
			}
			out = append(out, *convertIssue(repo, is))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateComment posts a conversation comment on an issue or pull request
// and returns it with its URL. The body is sent as a JSON field. One
// request.
func (c *Client) CreateComment(ctx context.Context, repo Repo, number int, body string) (*Comment, error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, err
	}
	o := op{action: "comment on", what: fmt.Sprintf("%s#%d", repo, number)}
	if strings.TrimSpace(body) == "" {
		return nil, c.fail(baton.Invalid, nil, o, "the comment is empty")
	}
	var ic gh.IssueComment
	if _, err := c.send(ctx, http.MethodPost, fmt.Sprintf("repos/%s/%s/issues/%d/comments", repo.Owner, repo.Name, number), gh.IssueCommentRequest{Body: body}, &ic, o); err != nil {
		return nil, err
	}
	cm := convertComment(&ic)
	return &cm, nil
}

func convertIssue(repo Repo, is *gh.Issue) *Issue {
	out := &Issue{
		Repo:          repo,
		Number:        is.GetNumber(),
		Title:         is.GetTitle(),
		Body:          is.GetBody(),
		State:         is.GetState(),
		StateReason:   is.GetStateReason(),
		Author:        is.GetUser().GetLogin(),
		URL:           is.GetHTMLURL(),
		IsPullRequest: is.IsPullRequest(),
		CommentCount:  is.GetComments(),
		CreatedAt:     is.GetCreatedAt().Time,
		UpdatedAt:     is.GetUpdatedAt().Time,
		ClosedAt:      is.GetClosedAt().Time,
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

func convertComment(ic *gh.IssueComment) Comment {
	return Comment{
		ID:        ic.GetID(),
		Author:    ic.GetUser().GetLogin(),
		Body:      ic.GetBody(),
		URL:       ic.GetHTMLURL(),
		CreatedAt: ic.GetCreatedAt().Time,
		UpdatedAt: ic.GetUpdatedAt().Time,
	}
}

// IssuePage is one page of a cached issue listing: the request URL, the
// ETag GitHub sent for it, the next page's URL ("" on the last page) and
// the page's issues (pull requests left out).
type IssuePage struct {
	URL    string  `json:"url"`
	ETag   string  `json:"etag,omitempty"`
	Next   string  `json:"next,omitempty"`
	Issues []Issue `json:"issues"`
}

// IssueListing is a complete listing: every page, in order. Requests
// counts the HTTP requests it took, NotModified those GitHub answered
// 304 (free of rate limit) and the cached page stood in for.
type IssueListing struct {
	Pages       []IssuePage
	Requests    int
	NotModified int
}

// Issues returns every issue of the listing.
func (l *IssueListing) Issues() []Issue {
	var out []Issue
	for _, p := range l.Pages {
		out = append(out, p.Issues...)
	}
	return out
}

// ListIssuesCached lists issues like ListIssues, page by page, sending
// each page's ETag from prev (a previous listing of the same filter): a
// page GitHub answers 304 Not Modified for is taken from prev, next link
// included. It returns the listing only when every page was read: an
// error means there is no complete listing. One request per page.
func (c *Client) ListIssuesCached(ctx context.Context, repo Repo, f IssueFilter, prev []IssuePage) (*IssueListing, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	q := url.Values{"state": {"open"}, "per_page": {"100"}}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if len(f.Labels) > 0 {
		q.Set("labels", strings.Join(f.Labels, ","))
	}
	cached := map[string]IssuePage{}
	for _, p := range prev {
		cached[p.URL] = p
	}
	o := op{action: "list issues of", what: repo.String()}
	out := &IssueListing{}
	next := fmt.Sprintf("repos/%s/%s/issues?%s", repo.Owner, repo.Name, q.Encode())
	seen := map[string]bool{}
	for next != "" {
		if len(out.Pages) == maxPages || seen[next] {
			return nil, c.fail(baton.Internal, nil, o, "GitHub's page links loop or never end")
		}
		seen[next] = true
		req, err := c.gh.NewRequest(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, c.internal(o, err)
		}
		old, hasOld := cached[next]
		if hasOld && old.ETag != "" {
			req.Header.Set("If-None-Match", old.ETag)
		}
		var items []*gh.Issue
		out.Requests++
		resp, err := c.gh.Do(req, &items)
		var er *gh.ErrorResponse
		if err != nil && hasOld && errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotModified {
			out.NotModified++
			out.Pages = append(out.Pages, old)
			next = old.Next
			continue
		}
		if err != nil {
			return nil, c.classify(o, err)
		}
		page := IssuePage{URL: next, ETag: resp.Header.Get("ETag"), Issues: []Issue{}}
		for _, is := range items {
			if !is.IsPullRequest() {
				page.Issues = append(page.Issues, *convertIssue(repo, is))
			}
		}
		next = ""
		if link, ok := nextLink(resp.Header.Get("Link")); ok {
			if next, err = c.sameAPI(link); err != nil {
				return nil, c.fail(baton.Internal, err, o, "GitHub sent a next-page link outside the API")
			}
			page.Next = next
		}
		out.Pages = append(out.Pages, page)
	}
	return out, nil
}
