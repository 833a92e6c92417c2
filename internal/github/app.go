package github

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	// ghinstallation's token options are of the go-github it is built on.
	ghi "github.com/google/go-github/v88/github"
	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

// Environment variables of a GitHub App identity. The key is the PEM
// text itself; baton's secrets code reads it from a file
// (BATON_GITHUB_APP_KEY_FILE, --github-app-key-file, or the credential
// github-app-key in $CREDENTIALS_DIRECTORY).
const (
	AppIDVar  = "BATON_GITHUB_APP_ID"
	AppKeyVar = "BATON_GITHUB_APP_KEY"
	// AppHostVar is the web host the App is registered on (github.com
	// unless set, a GitHub Enterprise Server host otherwise): repositories
	// there are reached as the App, others with their host's token.
	AppHostVar = "BATON_GITHUB_APP_HOST"
)

// App is a GitHub App baton acts as instead of a person's token: its id
// and private key. For each repository it looks up the App's
// installation (GET /repos/{owner}/{repo}/installation, authenticated
// with a JWT signed by the key) and mints tokens of that installation
// narrowed to the one repository (POST
// /app/installations/{id}/access_tokens with "repositories"), an hour
// each, minted again a minute before they expire;
// github.com/bradleyfalzon/ghinstallation signs and refreshes. A token
// minted for one repository works on no other the App is installed on.
// The JWT and the tokens go only to the API URL the repository's host
// resolves to (ResolveAPIURL): the same rule as a token's. Installations
// and their tokens are kept for the App's life, so every client of one
// process shares them. Safe for concurrent use.
type App struct {
	ID        int64
	key       *rsa.PrivateKey
	userAgent string
	// transport carries the App's requests (defaultTransport()).
	transport http.RoundTripper

	mu sync.Mutex
	// byRepo caches the installation of a repository, with its tokens,
	// by API base URL and lower-case owner/name.
	byRepo map[string]*Installation
}

// NewApp returns the App with id and its private key in PEM (PKCS#1 or
// PKCS#8, as GitHub hands it out). Invalid for a bad id or key; the key
// is never part of a message.
func NewApp(id int64, keyPEM []byte, userAgent string) (*App, error) {
	if id <= 0 {
		return nil, baton.Errorf(baton.Invalid, "bad GitHub App id %d: want the App's numeric id from its settings page", id)
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(keyPEM)
	if err != nil {
		return nil, baton.Errorf(baton.Invalid, "the GitHub App key is not an RSA private key in PEM: give the .pem file GitHub generated for App %d", id)
	}
	if userAgent == "" {
		userAgent = defaultUserAgent
	}
	return &App{ID: id, key: key, userAgent: userAgent, transport: defaultTransport(),
		byRepo: map[string]*Installation{}}, nil
}

// Installation is a GitHub App's installation on an account, as one
// repository's requests use it: its tokens reach that repository only.
type Installation struct {
	ID    int64
	AppID int64
	// Slug names the App; its bot posts as Slug + "[bot]".
	Slug    string
	Account string
	// Permissions are what the installation grants, as GitHub lists them:
	// {"contents": "write", "issues": "write", ...}.
	Permissions map[string]string
	base        *url.URL
	tr          *ghinstallation.Transport
}

// bot is the login the installation posts as, "" when its App's slug is
// not known.
func (in *Installation) bot() string {
	if in.Slug == "" {
		return ""
	}
	return in.Slug + "[bot]"
}

// Token returns the installation's current token, minting one when there
// is none or the last has less than a minute left. Errors carry GitHub's
// answer as an *AppTokenError.
func (in *Installation) Token(ctx context.Context) (Token, error) {
	tok, err := in.tr.Token(ctx)
	if err == nil {
		return Token(tok), nil
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return "", newAppTokenError(in.ID, he.Response)
	}
	// No answer at all: the cause is the transport's (a network error).
	return "", fmt.Errorf("mint a token of GitHub App installation %d: %w", in.ID, errors.Unwrap(err))
}

// AppTokenError is GitHub's refusal to mint an installation token.
type AppTokenError struct {
	Installation int64
	Status       int
	Message      string // GitHub's message
	resp         *http.Response
}

func (e *AppTokenError) Error() string {
	return fmt.Sprintf("GitHub answered %d %s to minting a token of installation %d", e.Status, e.Message, e.Installation)
}

func newAppTokenError(id int64, resp *http.Response) *AppTokenError {
	defer resp.Body.Close()
	var body struct {
		Message string `json:"message"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(b, &body)
	return &AppTokenError{Installation: id, Status: resp.StatusCode, Message: baton.Truncate(body.Message, 200, "…"), resp: resp}
}

// Installation returns the App's installation on repo, whose API is at
// baseURL (from ResolveAPIURL). NotFound when the App is not installed
// there; Invalid when GitHub refuses the App's JWT. One request the first
// time per repository, none after.
func (a *App) Installation(ctx context.Context, baseURL string, repo Repo) (*Installation, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	key := base.String() + "\x00" + strings.ToLower(repo.String())
	a.mu.Lock()
	in, ok := a.byRepo[key]
	a.mu.Unlock()
	if ok {
		return in, nil
	}
	// The JWT goes to the API base's origin only, whatever a redirect
	// says.
	apps, err := ghinstallation.NewAppsTransportWithOptions(
		&originOnly{next: &appHeaders{next: a.transport, userAgent: a.userAgent}, origin: origin(base)}, a.ID,
		ghinstallation.WithSigner(backdated{ghinstallation.NewRSASigner(jwt.SigningMethodRS256, a.key)}))
	if err != nil {
		return nil, err
	}
	c, err := New(Options{BaseURL: base.String(), UserAgent: a.userAgent, HTTPClient: &http.Client{Transport: apps}})
	if err != nil {
		return nil, err
	}
	var gi gh.Installation
	o := op{action: "find", what: fmt.Sprintf("the installation of GitHub App %d on %s", a.ID, repo)}
	if _, err := c.get(ctx, fmt.Sprintf("repos/%s/%s/installation", repo.Owner, repo.Name), &gi, o); err != nil {
		switch baton.ErrorCode(err) {
		case baton.NotFound:
			return nil, baton.WrapError(baton.NotFound, err, "GitHub App %d is not installed on %s: install it on the repository (the App's page, Install App), or leave BATON_GITHUB_APP_ID unset to use a token", a.ID, repo)
		case baton.Invalid:
			return nil, baton.WrapError(baton.Invalid, err, "GitHub refused GitHub App %d's credentials: check --github-app-id and that the key file is this App's private key", a.ID)
		}
		return nil, err
	}
	tr := ghinstallation.NewFromAppsTransport(apps, gi.GetID())
	tr.BaseURL = strings.TrimSuffix(base.String(), "/")
	// The installation may cover every repository of its account; the
	// token baton holds for this one covers this one.
	tr.InstallationTokenOptions = &ghi.InstallationTokenOptions{Repositories: []string{repo.Name}}
	a.mu.Lock()
	defer a.mu.Unlock()
	if in, ok := a.byRepo[key]; ok {
		return in, nil // another caller looked it up meanwhile: one token source per repository
	}
	in = &Installation{ID: gi.GetID(), AppID: a.ID, Slug: gi.GetAppSlug(), Account: gi.GetAccount().GetLogin(),
		Permissions: permissionsOf(gi.GetPermissions()), base: base, tr: tr}
	a.byRepo[key] = in
	return in, nil
}

// permissionsOf lists an installation's permissions by name.
func permissionsOf(p *gh.InstallationPermissions) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	b, err := json.Marshal(p)
	if err != nil {
		return out
	}
	_ = json.Unmarshal(b, &out)
	return out
}

// jwtBackdate is how far in the past an App's JWT says it was issued:
// GitHub advises a minute, against clock drift between this machine and
// GitHub's (ghinstallation itself backdates 30 s).
const jwtBackdate = time.Minute

// backdated signs the App's JWTs with iat jwtBackdate ago; exp stays
// where ghinstallation puts it, within GitHub's ten minutes of iat.
type backdated struct{ next ghinstallation.Signer }

func (b backdated) Sign(claims jwt.Claims) (string, error) {
	if rc, ok := claims.(*jwt.RegisteredClaims); ok {
		rc.IssuedAt = jwt.NewNumericDate(time.Now().Add(-jwtBackdate).Truncate(time.Second))
	}
	return b.next.Sign(claims)
}

// apiVersion is the REST API version baton's requests ask for: the one
// go-github sends with every request it makes.
const apiVersion = "2022-11-28"

// appHeaders gives the requests ghinstallation makes by itself (minting
// installation tokens, past go-github) what every other request of baton
// carries: its User-Agent and the API version.
type appHeaders struct {
	next      http.RoundTripper
	userAgent string
}

func (t *appHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") != "" && req.Header.Get("X-GitHub-Api-Version") != "" {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.userAgent)
	}
	if r.Header.Get("X-GitHub-Api-Version") == "" {
		r.Header.Set("X-GitHub-Api-Version", apiVersion)
	}
	return t.next.RoundTrip(r)
}

// originOnly refuses requests to any origin but one: a JWT or a token
// must not follow a redirect elsewhere.
type originOnly struct {
	next   http.RoundTripper
	origin string
}

func (t *originOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errOffsite
	}
	return t.next.RoundTrip(req)
}

// Apps keeps the App an environment names, built once, so that every
// client of a process shares its installations and tokens. The zero value
// is ready; a nil *Apps builds the App anew for each client.
type Apps struct {
	mu  sync.Mutex
	sum [32]byte
	app *App
}

// appConfig is the App an environment names, if any, and its host.
func (a *Apps) get(getenv func(string) string, userAgent string) (*App, string, error) {
	if getenv == nil {
		return nil, "", nil
	}
	idText, keyText := strings.TrimSpace(getenv(AppIDVar)), getenv(AppKeyVar)
	if idText == "" && strings.TrimSpace(keyText) == "" {
		return nil, "", nil
	}
	if idText == "" {
		return nil, "", baton.Errorf(baton.Invalid, "a GitHub App key is given but no App id: set %s or --github-app-id", AppIDVar)
	}
	if strings.TrimSpace(keyText) == "" {
		return nil, "", baton.Errorf(baton.Invalid, "%s is set but the App's private key is not: pass --github-app-key-file (or %s_FILE, or the credential github-app-key)", AppIDVar, AppKeyVar)
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return nil, "", baton.Errorf(baton.Invalid, "%s=%q is not a number: want the App's numeric id", AppIDVar, baton.Truncate(idText, 40, "…"))
	}
	host := DefaultHost
	if h := strings.TrimSpace(getenv(AppHostVar)); h != "" {
		hs, err := parseHosts(h)
		if err != nil || len(hs) != 1 {
			return nil, "", baton.Errorf(baton.Invalid, "%s=%q: want one host name", AppHostVar, baton.Truncate(h, 100, "…"))
		}
		host = hs[0]
	}
	if a == nil {
		app, err := NewApp(id, []byte(keyText), userAgent)
		return app, host, err
	}
	sum := sha256.Sum256([]byte(idText + "\x00" + keyText))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.app != nil && a.sum == sum {
		return a.app, host, nil
	}
	app, err := NewApp(id, []byte(keyText), userAgent)
	if err != nil {
		return nil, "", err
	}
	a.app, a.sum = app, sum
	return app, host, nil
}
