package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// The GraphQL documents baton sends. Variables are always $owner, $name,
// $number, $first and $after for reads and $id for the mutation;
// internal/github/githubtest answers exactly these shapes.
const (
	queryClosingIssues = `query ClosingIssues($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      closingIssuesReferences(first: $first, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { number title url state repository { nameWithOwner } }
      }
    }
  }
}`

	// includeClosedPrs: an issue's closing pull request may already be
	// merged or closed, and fix-issue must see that too.
	queryClosingPullRequests = `query ClosingPullRequests($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      closedByPullRequestsReferences(first: $first, after: $after, includeClosedPrs: true) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { number title url state isDraft repository { nameWithOwner } }
      }
    }
  }
}`

	mutationMarkReady = `mutation MarkReadyForReview($id: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $id}) {
    pullRequest { isDraft }
  }
}`
)

// gqlRequest is the body of a GraphQL POST.
type gqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// gqlError is one entry of a GraphQL response's "errors". GitHub adds a
// "type" (NOT_FOUND, FORBIDDEN, RATE_LIMITED, RATE_LIMIT, ...) and
// sometimes a "code" (graphql_rate_limit) next to the standard fields.
type gqlError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

// rateLimited reports a GraphQL rate-limit error. GitHub has typed it
// RATE_LIMITED, and lately RATE_LIMIT with code graphql_rate_limit.
func (e gqlError) rateLimited() bool {
	return e.Type == "RATE_LIMITED" || e.Type == "RATE_LIMIT" || e.Code == "graphql_rate_limit"
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// pageInfo is GraphQL's cursor pagination block.
type pageInfo struct {
	HasNextPage bool   `json:"hasNextPage"`
	EndCursor   string `json:"endCursor"`
}

// graphql POSTs one query and decodes "data" into data. A response with
// errors is an error even when data is partly present: briefs are all or
// nothing. One request.
func (c *Client) graphql(ctx context.Context, o op, query string, vars map[string]any, data any) error {
	req, err := c.gh.NewRequest(ctx, http.MethodPost, c.graphqlURL, gqlRequest{Query: query, Variables: vars})
	if err != nil {
		return c.internal(o, err)
	}
	var out gqlResponse
	resp, err := c.do(req, &out, o)
	if err != nil {
		return err
	}
	if len(out.Errors) > 0 {
		return c.graphqlError(o, resp.Response, out.Errors)
	}
	if err := json.Unmarshal(out.Data, data); err != nil {
		return c.fail(baton.Internal, err, o, "decode GitHub GraphQL answer")
	}
	return nil
}

// graphqlError maps GraphQL errors, which arrive with HTTP 200. A rate
// limit is one however GitHub types it, and so is any error answer sent
// with x-ratelimit-remaining: 0: its reset time is when to try again.
func (c *Client) graphqlError(o op, resp *http.Response, errs []gqlError) error {
	msgs := make([]string, 0, len(errs))
	limited := resp.Header.Get("X-Ratelimit-Remaining") == "0"
	for _, e := range errs {
		msgs = append(msgs, e.Message)
		limited = limited || e.rateLimited()
	}
	cause := fmt.Errorf("graphql: %s", strings.Join(msgs, "; "))
	if limited {
		return c.rateLimited(o, cause, graphqlReset(resp))
	}
	e := errs[0]
	switch e.Type {
	case "NOT_FOUND":
		return c.fail(baton.NotFound, cause, op{what: o.what}, "not found (%s)", e.Message)
	case "FORBIDDEN", "INSUFFICIENT_SCOPES":
		return c.fail(baton.Invalid, cause, o, "GitHub refused access (%s): the token lacks permission for this repository or action", e.Message)
	case "UNPROCESSABLE":
		return c.fail(baton.Invalid, cause, o, "GitHub refused: %s", e.Message)
	}
	return c.fail(baton.Internal, cause, o, "GitHub GraphQL error: %s", e.Message)
}

// graphqlReset is when a GraphQL rate limit lets requests through again:
// retry-after when GitHub sends it, else x-ratelimit-reset when it is
// ahead (the remaining count it sends with a limit error is not always
// 0), else a minute from now, GitHub's advice when it says nothing.
func graphqlReset(resp *http.Response) *RateLimitError {
	if reset, ok := retryAfter(resp); ok {
		return &RateLimitError{Reset: reset, Secondary: true}
	}
	if reset, ok := rateReset(resp); ok && reset.After(time.Now()) {
		return &RateLimitError{Reset: reset}
	}
	return &RateLimitError{Reset: time.Now().Add(secondaryDefault)}
}

// connection is the common shape of a paginated GraphQL connection.
type connection[N any] struct {
	TotalCount int      `json:"totalCount"`
	PageInfo   pageInfo `json:"pageInfo"`
	Nodes      []N      `json:"nodes"`
}

// gqlRepo is a node's repository.
type gqlRepo struct {
	NameWithOwner string `json:"nameWithOwner"`
}

// repo turns nameWithOwner into a Repo on host (the host of the
// repository the caller asked about: GraphQL does not say).
func (r gqlRepo) repo(host string) Repo {
	owner, name, _ := strings.Cut(r.NameWithOwner, "/")
	return Repo{Host: host, Owner: owner, Name: name}
}

// paginateGraphQL runs a connection query page by page (first: 100),
// passing each page's nodes to each. pick extracts the connection from a
// decoded page; it returns nil when the parent object is missing, which is
// reported as NotFound. One request per 100 nodes, at least one.
func paginateGraphQL[D, N any](ctx context.Context, c *Client, o op, query string, vars map[string]any, pick func(*D) *connection[N], each func(N)) error {
	var after any // null on the first page
	for pages := 0; ; pages++ {
		if pages == maxPages {
			return c.fail(baton.Internal, nil, o, "GitHub's GraphQL pages never end")
		}
		v := map[string]any{"first": perPage, "after": after}
		for k, val := range vars {
			v[k] = val
		}
		var data D
		if err := c.graphql(ctx, o, query, v, &data); err != nil {
			return err
		}
		conn := pick(&data)
		if conn == nil {
			return c.fail(baton.NotFound, nil, op{what: o.what}, "not found")
		}
		for _, n := range conn.Nodes {
			each(n)
		}
		if !conn.PageInfo.HasNextPage || conn.PageInfo.EndCursor == "" || conn.PageInfo.EndCursor == after {
			return nil
		}
		after = conn.PageInfo.EndCursor
	}
}
