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
// getenv function (TokenFromEnv, ResolveToken, ResolveAPIURL) so that
// cmd/baton stays the only place that touches os.Getenv. The token comes
// from GH_TOKEN or GITHUB_TOKEN, else from `gh auth token`; the repository
// from --repo (ParseRepo) or the origin remote (RepoFromRemote); the API base
// URL from --api-url, GITHUB_API_URL, or the repository's host.
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
