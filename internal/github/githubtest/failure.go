package githubtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Failure is an answer the server gives instead of serving a route. Build
// one with the constructors below, which produce GitHub's real status,
// headers and body, then adjust Times.
type Failure struct {
	Status int
	Header http.Header
	Body   string
	// Times is how many matching requests fail; 0 means every one until
	// ClearFailures.
	Times int
}

type failureRule struct {
	route route
	f     Failure
	left  int // remaining uses; -1 unlimited
}

// Fail makes requests that match route answer with f. Routes are
// "METHOD /path/pattern", where METHOD may be "*" and the pattern uses
// path.Match syntax against the API path ("GET /repos/o/r/pulls/*"), or
// "GRAPHQL field" for GraphQL requests asking for that root field
// ("GRAPHQL closingIssuesReferences", or "GRAPHQL *"). The most recently
// added matching rule wins.
func (s *Server) Fail(route string, f Failure) {
	s.t.Helper()
	m := s.mustRoute(route)
	left := f.Times
	if left == 0 {
		left = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, &failureRule{route: m, f: f, left: left})
}

// ClearFailures removes every injected failure.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = nil
}

// takeFailure returns the failure for a request and spends one use. Call
// with s.mu held.
func (s *Server) takeFailure(method, apiPath, field string) *Failure {
	for i := len(s.failures) - 1; i >= 0; i-- {
		r := s.failures[i]
		if r.left == 0 || !r.route.match(method, apiPath, field) {
			continue
		}
		if r.left > 0 {
			r.left--
		}
		f := r.f
		return &f
	}
	return nil
}

func failure(status int, header http.Header, body any) Failure {
	b, _ := json.Marshal(body)
	if header == nil {
		header = http.Header{}
	}
	return Failure{Status: status, Header: header, Body: string(b)}
}

// NotFound is GitHub's 404.
func NotFound() Failure {
	return failure(http.StatusNotFound, nil, errorBody{Message: "Not Found", DocumentationURL: docREST, Status: "404"})
}

// Unauthorized is GitHub's 401 for a bad or expired token.
func Unauthorized() Failure {
	return failure(http.StatusUnauthorized, nil, errorBody{Message: "Bad credentials", DocumentationURL: docREST, Status: "401"})
}

// Forbidden is a 403 that is not a rate limit: the token lacks a
// permission.
func Forbidden(message string) Failure {
	return failure(http.StatusForbidden, nil, errorBody{Message: message, DocumentationURL: docREST, Status: "403"})
}

// RateLimited is the primary rate limit: 403 with x-ratelimit-remaining: 0
// and x-ratelimit-reset at reset.
func RateLimited(reset time.Time) Failure {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", "0")
	h.Set("X-Ratelimit-Used", "5000")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", "core")
	return failure(http.StatusForbidden, h, errorBody{
		Message:          "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID BATON:0001.",
		DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit",
		Status:           "403",
	})
}

// TooManyRequests is a secondary rate limit answered with 429 and
// retry-after.
func TooManyRequests(retryAfter time.Duration) Failure {
	return secondary(http.StatusTooManyRequests, retryAfter)
}

// SecondaryRateLimit is a secondary rate limit answered with 403 and
// retry-after, as GitHub does for bursts of content creation.
func SecondaryRateLimit(retryAfter time.Duration) Failure {
	return secondary(http.StatusForbidden, retryAfter)
}

func secondary(status int, retryAfter time.Duration) Failure {
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	return failure(status, h, errorBody{
		Message:          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
		DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		Status:           strconv.Itoa(status),
	})
}

// ServerError is GitHub's 500.
func ServerError() Failure {
	return failure(http.StatusInternalServerError, nil, errorBody{Message: "Server Error", DocumentationURL: docREST, Status: "500"})
}

// HTTPError is any status with GitHub's error body.
func HTTPError(code int, message string) Failure {
	return failure(code, nil, errorBody{Message: message, DocumentationURL: docREST, Status: strconv.Itoa(code)})
}

// GraphQLRateLimited is the GraphQL primary rate limit: HTTP 200 with a
// RATE_LIMITED error and x-ratelimit-remaining: 0.
func GraphQLRateLimited(reset time.Time) Failure {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", "0")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", "graphql")
	return failure(http.StatusOK, h, map[string]any{
		"errors": []gqlError{{Type: "RATE_LIMITED", Message: "API rate limit already exceeded for user ID 1."}},
	})
}

// GraphQLRateLimit is the GraphQL rate limit as GitHub has sent it
// lately: HTTP 200, an error typed RATE_LIMIT with code
// graphql_rate_limit, and x-ratelimit-reset at reset. GitHub's remaining
// count need not be 0 in it; this one says 3.
func GraphQLRateLimit(reset time.Time) Failure {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", "3")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", "graphql")
	return failure(http.StatusOK, h, map[string]any{
		"errors": []gqlError{{Type: "RATE_LIMIT", Code: "graphql_rate_limit", Message: "API rate limit already exceeded for user ID 1."}},
	})
}

// GraphQLExhausted is a GraphQL error answer of any other type sent with
// x-ratelimit-remaining: 0 and x-ratelimit-reset at reset: the limit is
// spent whatever the error says.
func GraphQLExhausted(reset time.Time) Failure {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", "0")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", "graphql")
	return failure(http.StatusOK, h, map[string]any{
		"errors": []gqlError{{Message: "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug."}},
	})
}

// SecondaryRateLimitNoRetryAfter is a secondary rate limit answered with
// 403 and no retry-after, as GitHub does for some: the response still
// carries the primary limit's headers (x-ratelimit-reset up to an hour
// ahead, remaining above 0), which do not say when to retry.
func SecondaryRateLimitNoRetryAfter() Failure {
	return failure(http.StatusForbidden, nil, errorBody{
		Message:          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
		DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		Status:           "403",
	})
}
