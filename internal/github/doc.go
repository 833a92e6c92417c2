// Package github is baton's GitHub client: the REST API through
// github.com/google/go-github, and a few GraphQL calls (linked issues and
// pull requests, marking a draft ready) through a small POST.
//
// Consumers see this package's own types (PullRequest, Issue, File,
// CheckSummary, ...), never go-github's, so the library can change under
// them without touching the task briefs or the delivery pipeline.
//
// # Configuration
//
// Nothing here reads the process environment directly: callers pass a
// getenv function (TokenFromEnv, ResolveToken, ResolveAPIURL,
// HostsFromEnv) so that cmd/baton stays the only place that touches
// os.Getenv. The repository comes from --repo (ParseRepo), a URL
// (ParseNumber, ParseIssueURL) or the origin remote (RepoFromRemote).
//
// A token is sent only to the API of the host it was given for (Access):
// github.com's (GH_TOKEN, GITHUB_TOKEN, `gh auth token`) to api.github.com
// or GITHUB_API_URL; a GitHub Enterprise host's only when the host is
// listed (BATON_GITHUB_HOSTS, GH_HOST), with its own token
// (GH_ENTERPRISE_TOKEN, `gh auth token --hostname`), to that host or
// api.HOST. Plain http only to loopback, with
// BATON_GITHUB_ALLOW_HTTP_LOOPBACK for tests.
//
// # Requests
//
// Every method documents how many HTTP requests it makes, because the
// briefs have request budgets (review-pr: at most 4 for a pull request with
// at most 100 files) and every request spends rate limit. List calls ask for
// 100 items per page and follow the Link header's rel="next" until the last
// page, so "n pages" below means ceil(items/100), and at least 1.
//
// # Errors
//
// Every error is a *baton.Error whose message names the thing involved
// ("pull request o/r#12 not found"):
//
//   - 404 (and 410) → NotFound
//   - 401 → Invalid, with a hint to set GITHUB_TOKEN or run `gh auth login`
//   - 403 or 429 that is a rate limit → Unavailable wrapping *RateLimitError,
//     whose Reset says when to retry
//   - other 403, 422, other 4xx → Invalid
//   - 405 and 409 (merge refused, head changed), 422 "already exists" → Conflict
//   - 5xx, network errors, timeouts → Unavailable
//   - a canceled context → Canceled
//
// The token never appears in an error message, an error's cause chain, or
// a formatted Token or Client: Token prints as "[redacted]" and every error
// this package returns is scrubbed of the token's text.
package github
