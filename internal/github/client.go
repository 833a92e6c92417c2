package github

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

// defaultUserAgent is sent when Options.UserAgent is empty.
const defaultUserAgent = "baton"

// perPage is GitHub's maximum page size; fewer pages means fewer requests
// and less rate limit spent.
const perPage = 100

// maxPages stops a pagination loop against a server whose Link headers
// never end. 10,000 pages of 100 is far beyond any real list baton reads.
const maxPages = 10000

// Options configures a Client. The zero value talks to api.github.com
// without a token.
type Options struct {
	// Token authenticates every request to the API host. It is sent only
	// to that host, never to a redirect target elsewhere.
	Token Token
	// BaseURL is the REST API base URL: https://api.github.com/ (default),
	// https://HOST/api/v3/ for GitHub Enterprise Server, or a test
	// server's URL. It must not contain credentials.
	BaseURL string
	// HTTPClient sends the requests. Its Transport is wrapped to add the
	// token; the value passed in is not modified. The default has
	// connection and response-header timeouts but no overall timeout, so
	// streaming a large diff is bounded by the context, not a clock.
	HTTPClient *http.Client
	// UserAgent identifies baton to GitHub (DefaultUserAgent when empty).
	UserAgent string
	// Installation, when set, authenticates as a GitHub App installation
	// instead of with Token: each request carries the installation's
	// current token, minted and refreshed before it expires (App).
	Installation *Installation
}

// Client talks to one GitHub API host. It is safe for concurrent use.
type Client struct {
	gh         *gh.Client
	base       *url.URL
	graphqlURL string
	// sec holds the tokens for scrubbing errors. It is a pointer so that
	// printing a Client with %v shows an address, not the secret.
	sec *secret
	// app is the App installation the client acts as, nil for a token.
	app *Installation
}

// secret is the token as this package needs it internally: the one it
// was given, or an App installation's tokens as they were sent.
type secret struct {
	token string
	mu    sync.Mutex
	sent  []string // installation tokens sent, newest last
}

// maxSentTokens bounds the installation tokens kept for scrubbing: a
// token lives an hour, and an error shows one of the last few.
const maxSentTokens = 8

func (s *secret) remember(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.sent, tok) {
		return
	}
	s.sent = append(s.sent, tok)
	if len(s.sent) > maxSentTokens {
		s.sent = s.sent[1:]
	}
}

func (s *secret) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.sent)
	if s.token != "" {
		out = append(out, s.token)
	}
	return out
}

// New returns a Client for opts. It returns Invalid when BaseURL is not an
// http(s) URL or carries credentials.
func New(opts Options) (*Client, error) {
	raw := opts.BaseURL
	if raw == "" {
		raw = aPIURL("")
	}
	base, err := parseBaseURL(raw)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: defaultTransport()}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	sec := &secret{token: opts.Token.Value()}
	at := &authTransport{next: next, origin: origin(base), sec: sec}
	if in := opts.Installation; in != nil {
		if origin(in.base) != origin(base) {
			return nil, baton.Errorf(baton.Invalid, "the GitHub App installation was found through %s, not %s: its token goes to that API only", in.base.Host, base.Host)
		}
		at.source = in.Token
	}
	hc.Transport = at

	ua := opts.UserAgent
	if ua == "" {
		ua = defaultUserAgent
	}
	b := base.String()
	// go-github refuses a client's requests locally after a secondary
	// limit for as long as it thinks the limit lasts, which without
	// retry-after is until the primary reset: a minute is GitHub's advice.
	client, err := gh.NewClient(gh.WithHTTPClient(hc), gh.WithURLs(&b, &b), gh.WithUserAgent(ua),
		gh.WithMaxSecondaryRateLimitRetryAfterDuration(secondaryDefault))
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "configure GitHub client for %s", base.Host)
	}
	return &Client{gh: client, base: base, graphqlURL: graphQLURL(base), sec: sec, app: opts.Installation}, nil
}

// Token returns the token requests are sent with now, for git to push
// with: the one the client was given, or the App installation's current
// token (minted or refreshed when it has less than a minute left). Errors
// are those of minting a token (see App).
func (c *Client) Token(ctx context.Context) (Token, error) {
	if c.app == nil {
		return Token(c.sec.token), nil
	}
	tok, err := c.app.Token(ctx)
	if err != nil {
		return "", c.classify(op{action: "mint", what: "a GitHub App installation token"}, err)
	}
	c.sec.remember(tok.Value())
	return tok, nil
}

// Installation returns the GitHub App installation the client acts as,
// nil when it sends a token.
func (c *Client) Installation() *Installation { return c.app }

// String describes the client without its token.
func (c *Client) String() string { return "github.Client(" + c.base.String() + ")" }

// BaseURL returns the REST API base URL, with a trailing slash.
func (c *Client) BaseURL() string { return c.base.String() }

// GraphQLURL returns the GraphQL endpoint derived from the base URL:
// https://api.github.com/graphql, https://HOST/api/graphql for GitHub
// Enterprise Server, BASE/graphql otherwise.
func (c *Client) GraphQLURL() string { return c.graphqlURL }

// parseBaseURL validates and normalizes the API base URL. Messages never
// echo a URL that carries credentials.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, baton.Errorf(baton.Invalid, "bad GitHub API URL %q: want https://api.github.com/ or https://HOST/api/v3/", baton.Truncate(scrubCredentials(raw), 200, "…"))
	}
	if u.User != nil {
		return nil, baton.Errorf(baton.Invalid, "GitHub API URL must not contain credentials: pass the token in GITHUB_TOKEN instead")
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, baton.Errorf(baton.Invalid, "bad GitHub API URL %q: want https://api.github.com/ or https://HOST/api/v3/", baton.Truncate(raw, 200, "…"))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""
	return u, nil
}

// graphQLURL derives the GraphQL endpoint: GitHub Enterprise Server serves
// REST under /api/v3/ and GraphQL at /api/graphql; github.com and test
// servers serve it at /graphql next to the REST root.
func graphQLURL(base *url.URL) string {
	g := *base
	if strings.HasSuffix(g.Path, "/api/v3/") {
		g.Path = strings.TrimSuffix(g.Path, "v3/") + "graphql"
	} else {
		g.Path += "graphql"
	}
	return g.String()
}

// defaultTransport bounds connecting and waiting for response headers
// (GitHub can take a while to render a large diff) but not reading the
// body, which the caller's context bounds.
func defaultTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 15 * time.Second
	t.ResponseHeaderTimeout = 90 * time.Second
	return t
}

// origin returns scheme://host of u.
func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// authTransport adds the token to requests for the API origin only.
// go-github's own WithAuthToken adds it to every request, including a
// redirect to another host, which would hand the token to that host.
type authTransport struct {
	next   http.RoundTripper
	origin string
	sec    *secret
	// source gives an App installation's current token; nil sends
	// sec.token.
	source func(context.Context) (Token, error)
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin {
		return t.next.RoundTrip(req)
	}
	tok := t.sec.token
	if t.source != nil {
		got, err := t.source(req.Context())
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		tok = got.Value()
		t.sec.remember(tok)
	}
	if tok == "" {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.next.RoundTrip(r)
}

// do sends req and decodes a JSON body into v, mapping errors for op.
func (c *Client) do(req *http.Request, v any, o op) (*gh.Response, error) {
	resp, err := c.gh.Do(req, v)
	if err != nil {
		return resp, c.classify(o, err)
	}
	return resp, nil
}

// get GETs path (relative to the base URL) and decodes the body into v.
func (c *Client) get(ctx context.Context, path string, v any, o op) (*gh.Response, error) {
	req, err := c.gh.NewRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, c.internal(o, err)
	}
	return c.do(req, v, o)
}

// send sends a JSON body with method to path and decodes the answer into v.
func (c *Client) send(ctx context.Context, method, path string, body, v any, o op) (*gh.Response, error) {
	req, err := c.gh.NewRequest(ctx, method, path, body)
	if err != nil {
		return nil, c.internal(o, err)
	}
	return c.do(req, v, o)
}

// paginate GETs path with per_page=100 and follows the Link header's
// rel="next" URL until the last page, decoding each page into a fresh T
// and handing it to each. Following the server's link, rather than
// counting pages, is what GitHub recommends: it works for page- and
// cursor-based endpoints alike. It makes one request per page.
func paginate[T any](ctx context.Context, c *Client, path string, query url.Values, o op, each func(T) error) error {
	if query == nil {
		query = url.Values{}
	}
	query.Set("per_page", "100")
	next := path + "?" + query.Encode()
	seen := map[string]bool{}
	for pages := 0; next != ""; pages++ {
		if pages == maxPages || seen[next] {
			return c.fail(baton.Internal, nil, o, "GitHub's page links loop or never end")
		}
		seen[next] = true
		var page T
		resp, err := c.get(ctx, next, &page, o)
		if err != nil {
			return err
		}
		if err := each(page); err != nil {
			return err
		}
		link, ok := nextLink(resp.Header.Get("Link"))
		if !ok {
			return nil
		}
		next, err = c.sameAPI(link)
		if err != nil {
			return c.fail(baton.Internal, err, o, "GitHub sent a next-page link outside the API")
		}
	}
	return nil
}

// sameAPI resolves a link from a response and checks that it stays on the
// API origin and under the base path, so a hostile or broken Link header
// cannot send requests (and so the token) elsewhere.
func (c *Client) sameAPI(link string) (string, error) {
	u, err := c.base.Parse(link)
	if err != nil {
		return "", err
	}
	if origin(u) != origin(c.base) || !strings.HasPrefix(u.Path, c.base.Path) || u.User != nil {
		return "", errOffsite
	}
	return u.String(), nil
}

// op names what a call does and to what, for error messages: action
// "get", what "pull request o/r#12".
type op struct {
	action string
	what   string
}

func (o op) String() string { return o.action + " " + o.what }

// scrub removes the tokens' text from s.
func (c *Client) scrub(s string) string {
	if c.sec == nil {
		return s
	}
	for _, tok := range c.sec.all() {
		if len(tok) >= 4 {
			s = strings.ReplaceAll(s, tok, redacted)
		}
	}
	return s
}

// authenticated reports whether requests carry a credential.
func (c *Client) authenticated() bool { return c.sec.token != "" || c.app != nil }
