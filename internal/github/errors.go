package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

// RateLimitError says GitHub refused a request because a rate limit is
// exhausted, and when to try again. It is the cause of an Unavailable
// *baton.Error; find it with errors.As.
type RateLimitError struct {
	// Reset is when the limit resets: x-ratelimit-reset for the primary
	// limit, now + retry-after for a secondary limit, or now + 1 minute
	// when GitHub says neither (its documented advice).
	Reset time.Time
	// Secondary is true for a secondary (abuse) limit: too many requests
	// too fast, or too much concurrent content creation.
	Secondary bool
	// Default is set when GitHub named no time to wait (a secondary limit
	// without retry-after): Reset is then a minute from now, GitHub's
	// least advice, and a caller that meets the limit again should wait
	// longer each time (SecondaryWait).
	Default bool
}

// maxSecondaryWait caps SecondaryWait.
const maxSecondaryWait = 16 * time.Minute

// SecondaryWait is how long to hold off after the nth secondary rate
// limit in a row that named no time to wait: a minute, then doubling
// (2, 4, 8 minutes), at most 16, as GitHub's guidance asks (at least a
// minute, exponentially longer on repeats). n < 1 counts as 1.
func SecondaryWait(n int) time.Duration {
	w := secondaryDefault
	for i := 1; i < n && w < maxSecondaryWait; i++ {
		w *= 2
	}
	return min(w, maxSecondaryWait)
}

// Error says which limit was hit and when it resets, in UTC.
func (e *RateLimitError) Error() string {
	kind := "rate limit"
	if e.Secondary {
		kind = "secondary rate limit"
	}
	return fmt.Sprintf("GitHub API %s exceeded; retry after %s", kind, e.Reset.UTC().Format(time.RFC3339))
}

// ErrDiffTooLarge is the cause of the Invalid error PullRequestDiff returns
// when GitHub will not render a pull request's diff (406: more than 300
// files or 20,000 lines). The changed files' patches (PullRequestFiles)
// still carry the hunks.
var ErrDiffTooLarge = errors.New("diff too large for the GitHub API")

// ErrDraftsUnsupported is the cause of the Invalid error CreatePullRequest
// returns when the repository cannot hold draft pull requests: GitHub
// offers drafts in private repositories only on its Team and Enterprise
// plans, and answers 422 on Free and Pro. Open a ready pull request
// instead.
var ErrDraftsUnsupported = errors.New("draft pull requests are not supported in this repository")

// errIntegration is the cause of the Invalid error for GitHub's 403
// "Resource not accessible by integration": the token is a GitHub App
// installation's (GitHub Actions' GITHUB_TOKEN is one), and the App may
// not do this. GET /user is always refused to one: an App is no user.
var errIntegration = errors.New("resource not accessible by integration")

// errOffsite is the cause when a Link header points outside the API.
var errOffsite = errors.New("link outside the API base URL")

// secondaryDefault is GitHub's advice when a rate limit response carries
// neither retry-after nor x-ratelimit-reset: wait at least a minute.
const secondaryDefault = time.Minute

// authHint tells the user how to fix a missing or rejected token.
const authHint = "set GITHUB_TOKEN or GH_TOKEN, or run `gh auth login`"

// classify maps an error from go-github or the transport to a
// *baton.Error for o. See the package documentation for the table.
func (c *Client) classify(o op, err error) error {
	var (
		rl    *gh.RateLimitError
		abuse *gh.AbuseRateLimitError
		er    *gh.ErrorResponse
	)
	switch {
	case errors.Is(err, context.Canceled):
		return c.fail(baton.Canceled, err, o, "canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return c.fail(baton.Unavailable, err, o, "timed out waiting for GitHub: try again later")
	case errors.As(err, &rl):
		reset := rl.Rate.Reset.Time
		if reset.IsZero() {
			reset = time.Now().Add(secondaryDefault)
		}
		return c.rateLimited(o, err, &RateLimitError{Reset: reset})
	case errors.As(err, &abuse):
		// Only retry-after says when a secondary limit ends. go-github
		// falls back to x-ratelimit-reset, the primary limit's reset (up to
		// an hour away), which would hold every source on the host that
		// long; without retry-after, GitHub advises a minute, growing.
		rl := &RateLimitError{Secondary: true}
		if abuse.Response != nil {
			rl.Reset, _ = retryAfter(abuse.Response)
		}
		if rl.Reset.IsZero() {
			rl.Reset, rl.Default = time.Now().Add(secondaryDefault), true
		}
		return c.rateLimited(o, err, rl)
	case errors.As(err, &er) && er.Response != nil:
		return c.classifyStatus(o, err, er)
	}
	var mint *AppTokenError
	if errors.As(err, &mint) {
		return c.classifyMint(o, err, mint)
	}
	var accepted *gh.AcceptedError
	if errors.As(err, &accepted) {
		// 202: GitHub is still computing (statistics endpoints); retry.
		return c.fail(baton.Unavailable, err, o, "GitHub is still preparing the answer: try again shortly")
	}
	if isNetwork(err) {
		return c.fail(baton.Unavailable, err, o, "cannot reach the GitHub API at %s: try again later", c.base.Host)
	}
	return c.fail(baton.Internal, err, o, "unexpected answer from GitHub")
}

// classifyStatus maps an HTTP error response.
func (c *Client) classifyStatus(o op, err error, er *gh.ErrorResponse) error {
	resp := er.Response
	status := resp.StatusCode
	ghMsg := strings.TrimSpace(er.Message)
	detail := fmt.Sprintf("%d %s", status, ghMsg)
	if ghMsg == "" {
		detail = resp.Status
	}
	if rl := rateLimitFromResponse(resp); rl != nil {
		return c.rateLimited(o, err, rl)
	}
	switch {
	case status == http.StatusUnauthorized:
		return c.fail(baton.Invalid, err, o, "GitHub rejected the credentials (%s): %s", detail, authHint)
	case status == http.StatusNotFound || status == http.StatusGone:
		if !c.authenticated() {
			return c.fail(baton.NotFound, err, op{what: o.what}, "not found (no GitHub token is set, and private repositories look missing without one: %s)", authHint)
		}
		return c.fail(baton.NotFound, err, op{what: o.what}, "not found")
	case status == http.StatusForbidden && integration(er):
		return c.fail(baton.Invalid, errors.Join(errIntegration, err), o, "GitHub refused access (%s): the token is a GitHub App's, and the App may not do this: grant it the permission, or use a personal token", detail)
	case status == http.StatusForbidden:
		return c.fail(baton.Invalid, err, o, "GitHub refused access (%s): the token lacks permission for this repository or action", detail)
	case status == http.StatusNotAcceptable && hasErrorCode(er, "too_large"):
		return c.fail(baton.Invalid, errors.Join(ErrDiffTooLarge, err), o, "GitHub will not render a diff this large (%s): read the changed files' patches instead", detail)
	case status == http.StatusMethodNotAllowed || status == http.StatusConflict:
		return c.fail(baton.Conflict, err, o, "%s", detail)
	case status == http.StatusUnprocessableEntity && draftsUnsupported(er):
		return c.fail(baton.Invalid, errors.Join(ErrDraftsUnsupported, err), o, "%s: the repository's plan has no draft pull requests (private repositories on GitHub Free and Pro); open a ready one", detail)
	case status == http.StatusUnprocessableEntity && alreadyExists(er):
		return c.fail(baton.Conflict, err, o, "%s", validationDetail(er, detail))
	case status == http.StatusUnprocessableEntity:
		return c.fail(baton.Invalid, err, o, "%s", validationDetail(er, detail))
	case status >= 500:
		return c.fail(baton.Unavailable, err, o, "GitHub is unavailable (%s): try again later", detail)
	}
	return c.fail(baton.Invalid, err, o, "%s", detail)
}

// classifyMint maps GitHub's refusal to mint an App installation token:
// the App's credentials (401), the installation gone or suspended (404,
// 403), a rate limit, GitHub down.
func (c *Client) classifyMint(o op, err error, e *AppTokenError) error {
	if rl := rateLimitFromResponse(e.resp); rl != nil {
		return c.rateLimited(o, err, rl)
	}
	detail := fmt.Sprintf("%d %s", e.Status, e.Message)
	switch {
	case e.Status == http.StatusUnauthorized:
		return c.fail(baton.Invalid, err, o, "GitHub refused the App's credentials minting a token (%s): check --github-app-id and the App's private key", detail)
	case e.Status == http.StatusNotFound || e.Status == http.StatusForbidden:
		return c.fail(baton.Invalid, err, o, "GitHub will not mint a token of installation %d (%s): the App was uninstalled or suspended; install it again", e.Installation, detail)
	case e.Status >= 500:
		return c.fail(baton.Unavailable, err, o, "GitHub is unavailable minting a token (%s): try again later", detail)
	}
	return c.fail(baton.Invalid, err, o, "GitHub refused to mint a token (%s)", detail)
}

// rateLimitFromResponse recognises a rate-limit answer by its headers, per
// GitHub's documentation: a 403 or 429 with retry-after (wait that many
// seconds) or with x-ratelimit-remaining: 0 (wait until x-ratelimit-reset).
// A 429 without either still means "too many requests": wait a minute.
// go-github recognises the primary limit and documented secondary-limit
// bodies itself; this catches the rest, such as a bare 429.
func rateLimitFromResponse(resp *http.Response) *RateLimitError {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	if reset, ok := retryAfter(resp); ok {
		return &RateLimitError{Reset: reset, Secondary: true}
	}
	if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
		if reset, ok := rateReset(resp); ok {
			return &RateLimitError{Reset: reset}
		}
		return &RateLimitError{Reset: time.Now().Add(secondaryDefault)}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return &RateLimitError{Reset: time.Now().Add(secondaryDefault), Secondary: true, Default: true}
	}
	return nil
}

// retryAfter reads retry-after: seconds (what GitHub sends) or an HTTP
// date. Seconds count from the response's Date header when present, so
// the reset does not drift with the time spent reading the response.
func retryAfter(resp *http.Response) (time.Time, bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return time.Time{}, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		now := time.Now()
		if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil && d.Before(now) {
			now = d
		}
		return now.Add(time.Duration(secs) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// rateReset reads x-ratelimit-reset, in UTC epoch seconds.
func rateReset(resp *http.Response) (time.Time, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("X-Ratelimit-Reset")), 10, 64)
	if err != nil || v <= 0 {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}

// rateLimited builds the Unavailable error for a rate limit.
func (c *Client) rateLimited(o op, cause error, rl *RateLimitError) error {
	wait := time.Until(rl.Reset).Round(time.Second)
	if wait < 0 {
		wait = 0
	}
	kind := "rate limit"
	if rl.Secondary {
		kind = "secondary rate limit"
	}
	return &baton.Error{
		Code: baton.Unavailable,
		Message: c.scrub(fmt.Sprintf("%s: GitHub API %s exceeded: retry after %s (in %s)",
			o, kind, rl.Reset.UTC().Format(time.RFC3339), wait)),
		Err: c.cause(cause, rl),
	}
}

// fail builds a *baton.Error for o. The message reads "<action> <what>:
// <detail>", or "<what> <detail>" when o has no action. Both the message
// and the cause are scrubbed of the token.
func (c *Client) fail(code baton.Code, cause error, o op, format string, args ...any) error {
	prefix := o.String() + ":"
	if o.action == "" {
		prefix = o.what
	}
	e := &baton.Error{Code: code, Message: c.scrub(prefix + " " + fmt.Sprintf(format, args...))}
	if cause != nil {
		e.Err = c.cause(cause)
	}
	return e
}

// internal reports a bug on our side, such as a request that cannot be
// built.
func (c *Client) internal(o op, err error) error {
	return c.fail(baton.Internal, err, o, "build request")
}

// keptSentinels survive into an error's cause chain, so callers can test
// them with errors.Is.
var keptSentinels = []error{context.Canceled, context.DeadlineExceeded, ErrDiffTooLarge, ErrDraftsUnsupported, errIntegration, errOffsite}

// cause turns a library or transport error into a safe cause: its text,
// scrubbed of the token, plus this package's sentinels and extra (a
// *RateLimitError). Nothing else stays in the chain, so neither the token
// (say, echoed in a proxy's error body) nor a go-github type can be
// reached by unwrapping.
func (c *Client) cause(err error, extra ...error) error {
	kept := extra
	for _, s := range keptSentinels {
		if errors.Is(err, s) {
			kept = append(kept, s)
		}
	}
	// errors.Join separates with newlines; a cause is one line in a log.
	text := strings.ReplaceAll(c.scrub(err.Error()), "\n", "; ")
	return &causeError{text: text, kept: kept}
}

// causeError is a flattened, scrubbed cause.
type causeError struct {
	text string
	kept []error
}

func (e *causeError) Error() string   { return e.text }
func (e *causeError) Unwrap() []error { return e.kept }

// hasErrorCode reports whether GitHub's validation errors include code.
func hasErrorCode(er *gh.ErrorResponse, code string) bool {
	for _, e := range er.Errors {
		if e.Code == code {
			return true
		}
	}
	return false
}

// alreadyExists recognises GitHub's 422 for a duplicate, such as "A pull
// request already exists for o:branch." GitHub gives no machine-readable
// code for it (the error code is "custom"), so the text is all there is.
func alreadyExists(er *gh.ErrorResponse) bool {
	for _, e := range er.Errors {
		if e.Code == "already_exists" || strings.Contains(strings.ToLower(e.Message), "already exists") {
			return true
		}
	}
	return false
}

// draftsUnsupported recognises GitHub's 422 for a draft pull request in a
// repository whose plan has none. Its body is the message alone (no
// error code), so the text is all there is.
func draftsUnsupported(er *gh.ErrorResponse) bool {
	return strings.Contains(strings.ToLower(er.Message), "draft pull requests are not supported")
}

// integration recognises GitHub's 403 for an App's token doing what an
// App may not; the message is all GitHub gives.
func integration(er *gh.ErrorResponse) bool {
	return strings.Contains(strings.ToLower(er.Message), "not accessible by integration")
}

// validationDetail joins GitHub's per-field messages after the summary,
// because "422 Validation Failed" alone says nothing.
func validationDetail(er *gh.ErrorResponse, detail string) string {
	var parts []string
	for _, e := range er.Errors {
		switch {
		case e.Message != "":
			parts = append(parts, e.Message)
		case e.Field != "":
			parts = append(parts, fmt.Sprintf("%s %s is %s", e.Resource, e.Field, e.Code))
		}
	}
	if len(parts) == 0 {
		return detail
	}
	return detail + ": " + strings.Join(parts, "; ")
}

// isNetwork reports a failure to talk to the server at all, or a
// connection cut mid-answer: worth retrying.
func isNetwork(err error) bool {
	var (
		ne net.Error
		ue *url.Error
	)
	return errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
