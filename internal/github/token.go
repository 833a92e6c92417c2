package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Token is a GitHub access token. It formats as "[redacted]" with every
// fmt verb, in slog and in JSON, so a token that reaches a log line or an
// error by mistake stays hidden. Value returns the secret for the one place
// that needs it, the Authorization header.
type Token string

const redacted = "[redacted]"

// Value returns the token's text.
func (t Token) Value() string { return string(t) }

// String returns "[redacted]".
func (t Token) String() string { return redacted }

// GoString returns a redacted Go expression, for %#v.
func (t Token) GoString() string { return `github.Token("` + redacted + `")` }

// Format writes "[redacted]" for every verb, including %x and %q, which
// would otherwise print the underlying string.
func (t Token) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue keeps the token out of slog output.
func (t Token) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText keeps the token out of JSON and other text encodings.
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// ErrNoToken is the cause of ResolveToken's error when neither the
// environment nor gh has a token.
var ErrNoToken = errors.New("no GitHub token")

// Environment variables that may hold a token, in gh's order of
// precedence, so baton and gh agree on which account acts.
var (
	tokenVars           = []string{"GH_TOKEN", "GITHUB_TOKEN"}
	enterpriseTokenVars = []string{"GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"}
)

// TokenFromEnv returns the token in GH_TOKEN or GITHUB_TOKEN (gh's order)
// and the name of the variable it came from, or "", "" when both are empty.
func TokenFromEnv(getenv func(string) string) (Token, string) {
	return tokenFromVars(getenv, tokenVars)
}

func tokenFromVars(getenv func(string) string, vars []string) (Token, string) {
	if getenv == nil {
		return "", ""
	}
	for _, v := range vars {
		if t := strings.TrimSpace(getenv(v)); t != "" {
			return Token(t), v
		}
	}
	return "", ""
}

// gHTimeout bounds `gh auth token`. It reads gh's config or the system
// keyring and should answer at once; a hung keyring prompt must not hang
// baton.
const gHTimeout = 5 * time.Second

// tokenFromGH returns the token that gh stores for host (github.com when
// empty) by running `gh auth token --hostname host`, found on the process
// PATH, within GHTimeout. It returns an error wrapping exec.ErrNotFound
// when gh is not installed. Neither gh's output nor the token is ever part
// of an error.
func tokenFromGH(ctx context.Context, host string) (Token, error) {
	if host == "" {
		host = DefaultHost
	}
	path, err := exec.LookPath("gh")
	if err != nil {
		return "", fmt.Errorf("find gh: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, gHTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "auth", "token", "--hostname", host)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that keeps the pipes open after being killed must not block
	// Wait past the timeout.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("gh auth token: timed out after %s", gHTimeout)
		}
		msg := baton.Truncate(strings.TrimSpace(firstLine(stderr.String())), 200, "…")
		if msg == "" {
			return "", fmt.Errorf("gh auth token: %w", err)
		}
		return "", fmt.Errorf("gh auth token: %s: %w", msg, err)
	}
	t := strings.TrimSpace(stdout.String())
	if !plausibleToken(t) {
		// Never echo what gh printed: it may be a token in a shape we do
		// not expect.
		return "", errors.New("gh auth token printed something that is not a token")
	}
	return Token(t), nil
}

// plausibleToken accepts printable ASCII without spaces. GitHub tokens are
// ghp_/gho_/ghs_/github_pat_ strings or 40 hex digits; anything with
// whitespace or control bytes would corrupt the Authorization header.
func plausibleToken(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// resolveToken finds the token for host (github.com when empty). For
// github.com: GH_TOKEN or GITHUB_TOKEN, then `gh auth token`. For a GitHub
// Enterprise host: GH_ENTERPRISE_TOKEN or GITHUB_ENTERPRISE_TOKEN, then
// `gh auth token --hostname HOST`, and never the github.com token, which
// was given for github.com only. It returns the token and where it came
// from (a variable name or "gh auth token"). With no token it returns an
// Invalid error wrapping ErrNoToken that says how to provide one. Whether
// the host may get a token at all is Hosts' question (Access asks both).
func resolveToken(ctx context.Context, getenv func(string) string, host string) (Token, string, error) {
	enterprise := host != "" && host != DefaultHost
	vars := tokenVars
	hint := "set GITHUB_TOKEN or GH_TOKEN, or run `gh auth login`"
	if enterprise {
		vars = enterpriseTokenVars
		hint = fmt.Sprintf("set GH_ENTERPRISE_TOKEN, or run `gh auth login --hostname %s` (the github.com token is never sent to another host)", host)
	}
	if t, src := tokenFromVars(getenv, vars); t != "" {
		return t, src, nil
	}
	t, err := tokenFromGH(ctx, host)
	if err == nil {
		return t, "gh auth token", nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return "", "", baton.WrapError(baton.Invalid, ErrNoToken, "no GitHub token for %s: %s", hostOrDefault(host), hint)
	}
	return "", "", baton.WrapError(baton.Invalid, fmt.Errorf("%w: %w", ErrNoToken, err), "no GitHub token for %s: %s", hostOrDefault(host), hint)
}

func hostOrDefault(h string) string {
	if h == "" {
		return DefaultHost
	}
	return h
}

// aPIURL returns the REST API base URL for a web host:
// https://api.github.com/ for github.com (or ""), and
// https://HOST/api/v3/ for GitHub Enterprise Server.
func aPIURL(host string) string {
	if host == "" || host == DefaultHost {
		return "https://api.github.com/"
	}
	return "https://" + host + "/api/v3/"
}

// Access opens the API for hosts with credentials from an environment:
// the host must be one baton may authenticate to (HostsFromEnv), the base
// URL one its token may go to (ResolveAPIURL), and the credential the
// host's own: the GitHub App the environment names (BATON_GITHUB_APP_ID
// and its key) for repositories on the App's host, else the host's token
// (ResolveToken). The CLI's, the server's and the delivery pipeline's
// clients all come from one.
type Access struct {
	Getenv    func(string) string
	UserAgent string
	// Apps keeps the App, its installations and their tokens across
	// clients; nil builds them anew for each client (a command that makes
	// one or two).
	Apps *Apps
}

// Client returns a client for repo's host. apiURL overrides the base URL
// ("" = the host's, or GITHUB_API_URL for github.com). A host that is not
// configured, an API URL the host's credential may not go to, a missing
// token (wrapping ErrNoToken) and a bad App configuration are Invalid and
// send no request; an App not installed on repo is NotFound (one request,
// the installation lookup).
func (a Access) Client(ctx context.Context, repo Repo, apiURL string) (*Client, error) {
	base, err := a.baseURL(repo, apiURL)
	if err != nil {
		return nil, err
	}
	app, appHost, err := a.Apps.get(a.Getenv, a.UserAgent)
	if err != nil {
		return nil, err
	}
	if app != nil && normalizeHost(hostOrDefault(repo.Host)) == appHost {
		in, err := app.Installation(ctx, base, repo)
		if err != nil {
			return nil, err
		}
		return New(Options{BaseURL: base, UserAgent: a.UserAgent, Installation: in})
	}
	tok, _, err := resolveToken(ctx, a.Getenv, repo.Host)
	if err != nil {
		return nil, err
	}
	return New(Options{Token: tok, BaseURL: base, UserAgent: a.UserAgent})
}

// baseURL checks that repo's host is configured and resolves its API URL.
func (a Access) baseURL(repo Repo, apiURL string) (string, error) {
	hosts, err := HostsFromEnv(a.Getenv)
	if err != nil {
		return "", err
	}
	if err := hosts.Check(repo.Host); err != nil {
		return "", err
	}
	return resolveAPIURL(apiURL, a.Getenv, repo.Host)
}

// Identity says who a client of repo acts as and what it may do, without
// sending a request for an App (its installation is known) and with one
// (GET /user) for a token: its account and, for a classic token, its
// OAuth scopes. For doctor.
type Identity struct {
	// Kind is "app" for a GitHub App installation, "token" otherwise.
	Kind string `json:"kind"`
	// Source says where the credential comes from: "GitHub App 123,
	// installation 456 on octo", "GH_TOKEN", "gh auth token".
	Source string `json:"source"`
	// Account is the login requests act as ("" when GitHub does not say).
	Account string `json:"account,omitempty"`
	// May lists what the credential may do: an App installation's
	// permissions ("issues: write"), a classic token's scopes; empty
	// for a fine-grained token, whose permissions GitHub does not tell.
	May []string `json:"may"`
}

// Identity reports who the client acts as: an App installation without a
// request (its installation is known), a token with one (GET /user) that
// names its account and, for a classic token, its OAuth scopes. A token
// that turns out to be an App installation's (GitHub Actions'
// GITHUB_TOKEN) says so in Source.
func (c *Client) Identity(ctx context.Context) (Identity, error) {
	if in := c.Installation(); in != nil {
		id := Identity{Kind: "app", Source: fmt.Sprintf("GitHub App %d, installation %d on %s", in.AppID, in.ID, in.Account), Account: in.bot(), May: []string{}}
		for _, name := range slices.Sorted(maps.Keys(in.Permissions)) {
			id.May = append(id.May, name+": "+in.Permissions[name])
		}
		return id, nil
	}
	id := Identity{Kind: "token", May: []string{}}
	u, scopes, err := c.viewerScopes(ctx)
	if err != nil {
		return id, err
	}
	id.Account, id.May = u.Login, scopes
	if u.App {
		id.Kind, id.Source = "app", "(a GitHub App installation's token)"
	}
	return id, nil
}

// CheckAPIURL says whether apiURL may serve repo's host, as Client would
// decide, without resolving a token: for the CLI to refuse a source's API
// URL when it is set rather than at its first sync.
func (a Access) CheckAPIURL(repo Repo, apiURL string) error {
	hosts, err := HostsFromEnv(a.Getenv)
	if err != nil {
		return err
	}
	if err := hosts.Check(repo.Host); err != nil {
		return err
	}
	_, err = resolveAPIURL(apiURL, a.Getenv, repo.Host)
	return err
}
