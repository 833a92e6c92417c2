package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

// Permission returns login's permission on repo as GitHub's collaborator
// permission API names it: admin, write (which maintain reads as), read
// (triage too) or none. A login GitHub does not know has none. One
// request.
func (c *Client) Permission(ctx context.Context, repo Repo, login string) (string, error) {
	if err := repo.validate(); err != nil {
		return "", err
	}
	if !validOwner(login) {
		return "none", nil
	}
	var out struct {
		Permission string `json:"permission"`
	}
	o := op{action: "read the permission of " + login + " on", what: repo.String()}
	_, err := c.get(ctx, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", repo.Owner, repo.Name, url.PathEscape(login)), &out, o)
	if baton.ErrorCode(err) == baton.NotFound {
		return "none", nil
	}
	if err != nil {
		return "", err
	}
	return out.Permission, nil
}

// CanWrite reports whether a permission from Permission may push: admin
// or write.
func CanWrite(permission string) bool { return permission == "admin" || permission == "write" }

// React adds a reaction (eyes, +1, rocket, ...) to a conversation comment
// as the client's account; reacting twice is no error. One request.
func (c *Client) React(ctx context.Context, repo Repo, commentID int64, content string) error {
	if err := repo.validate(); err != nil {
		return err
	}
	o := op{action: "react " + content + " to", what: fmt.Sprintf("comment %d of %s", commentID, repo)}
	_, err := c.send(ctx, http.MethodPost, fmt.Sprintf("repos/%s/%s/issues/comments/%d/reactions", repo.Owner, repo.Name, commentID),
		map[string]string{"content": content}, nil, o)
	return err
}

// RepoComments lists the conversation comments of every issue and pull
// request of repo updated at or after since, oldest first, each with the
// number it is on. One request per 100 comments (at least one).
func (c *Client) RepoComments(ctx context.Context, repo Repo, since time.Time) ([]Comment, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	q := url.Values{"sort": {"updated"}, "direction": {"asc"}}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339))
	}
	var out []Comment
	o := op{action: "list comments of", what: repo.String()}
	err := paginate(ctx, c, fmt.Sprintf("repos/%s/%s/issues/comments", repo.Owner, repo.Name), q, o, func(page []*gh.IssueComment) error {
		for _, ic := range page {
			cm := convertComment(ic)
			cm.Number = numberOf(ic.GetIssueURL())
			out = append(out, cm)
		}
		return nil
	})
	return out, err
}

// numberOf reads the issue number at the end of an API issue URL.
func numberOf(issueURL string) int {
	i := strings.LastIndex(issueURL, "/")
	n, err := strconv.Atoi(issueURL[i+1:])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// ReviewPage is a pull request's reviews as last read, with GitHub's
// ETag, so the next read of an unchanged list costs no rate limit.
type ReviewPage struct {
	ETag    string
	Reviews []Review
}

// Reviews lists a pull request's submitted reviews, oldest first. With
// prev (the last answer), an unchanged list is answered 304 by GitHub and
// prev stands in for it (notModified). One request while it holds at most
// 100 reviews; beyond, one per 100 and no ETag.
func (c *Client) Reviews(ctx context.Context, repo Repo, number int, prev *ReviewPage) (page *ReviewPage, notModified bool, err error) {
	if err := checkTarget(repo, number); err != nil {
		return nil, false, err
	}
	o := prOp("list reviews of", repo, number)
	path := fmt.Sprintf("repos/%s/%s/pulls/%d/reviews?per_page=100", repo.Owner, repo.Name, number)
	req, err := c.gh.NewRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, false, c.internal(o, err)
	}
	if prev != nil && prev.ETag != "" {
		req.Header.Set("If-None-Match", prev.ETag)
	}
	var items []*gh.PullRequestReview
	resp, err := c.gh.Do(req, &items)
	var er *gh.ErrorResponse
	if err != nil && prev != nil && errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotModified {
		return prev, true, nil
	}
	if err != nil {
		return nil, false, c.classify(o, err)
	}
	page = &ReviewPage{ETag: resp.Header.Get("ETag")}
	add := func(items []*gh.PullRequestReview) {
		for _, r := range items {
			page.Reviews = append(page.Reviews, convertReview(r))
		}
	}
	add(items)
	if link, ok := nextLink(resp.Header.Get("Link")); ok {
		// More than a page: read the rest without caching.
		page.ETag = ""
		next, err := c.sameAPI(link)
		if err != nil {
			return nil, false, c.fail(baton.Internal, err, o, "GitHub sent a next-page link outside the API")
		}
		u, _ := url.Parse(next)
		if err := paginate(ctx, c, strings.TrimPrefix(u.Path, c.base.Path), u.Query(), o, func(p []*gh.PullRequestReview) error {
			add(p)
			return nil
		}); err != nil {
			return nil, false, err
		}
	}
	return page, false, nil
}

func convertReview(r *gh.PullRequestReview) Review {
	return Review{
		ID: r.GetID(), Author: r.GetUser().GetLogin(), Body: r.GetBody(), State: r.GetState(),
		CommitID: r.GetCommitID(), URL: r.GetHTMLURL(), SubmittedAt: r.GetSubmittedAt().Time,
	}
}
