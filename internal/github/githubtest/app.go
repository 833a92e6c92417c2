package githubtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub Apps. A test registers an App with its public key (AddApp),
// installs it on repositories (Install), and the server then answers what
// a GitHub App client asks, with GitHub's shapes:
//
//   - GET /repos/{owner}/{repo}/installation and POST
//     /app/installations/{id}/access_tokens authenticate with a JWT that
//     the server verifies: RS256, signed by the App's key, iss the App's
//     id, issued no later than a minute from now, not expired, living at
//     most ten minutes. Anything else is 401, as on GitHub.
//   - The installation tokens they mint (ghs_…) act as the App's bot
//     ("<slug>[bot]") on the installation's repositories only, until they
//     expire (TokenLifetime, an hour by default): GET /user answers 403
//     "Resource not accessible by integration", and other repositories
//     look missing (404).
//
// AddInstallationToken registers such a token directly, as GitHub
// Actions' GITHUB_TOKEN is one.

// App is a GitHub App the server knows.
type App struct {
	ID   int64
	Slug string // the bot's login is Slug + "[bot]"
	Key  *rsa.PublicKey
	// Permissions are what its installations grant, as GitHub lists them
	// ({"contents": "write", ...}); nil grants what baton asks for.
	Permissions map[string]string
}

// Bot returns the login the App posts as.
func (a App) Bot() string { return a.Slug + "[bot]" }

// DefaultAppPermissions are the permissions an App is installed with when
// the test names none: what baton's docs tell a team to grant.
var DefaultAppPermissions = map[string]string{
	"metadata": "read", "contents": "write", "issues": "write", "pull_requests": "write",
	"checks": "write", "statuses": "write",
}

type installation struct {
	id    int64
	app   int64
	owner string
	repos []string // lower-case owner/name
}

type installToken struct {
	bot     string
	install int64    // 0 for a token registered by the test (all repositories)
	repos   []string // nil: every repository
	expires time.Time
}

// MintedToken is an installation token the server handed out.
type MintedToken struct {
	Installation int64
	// Repositories are what the token reaches (lower-case owner/name).
	Repositories []string
	ExpiresAt    time.Time
}

// AddApp registers a GitHub App.
func (s *Server) AddApp(a App) {
	s.t.Helper()
	if a.ID <= 0 || a.Slug == "" || a.Key == nil {
		s.t.Fatalf("githubtest: an App needs an ID, a Slug and a Key")
	}
	if a.Permissions == nil {
		a.Permissions = DefaultAppPermissions
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps == nil {
		s.apps = map[int64]App{}
	}
	s.apps[a.ID] = a
}

// Install installs the App on repositories (owner/name, one owner) and
// returns the installation's id. The repositories are created.
func (s *Server) Install(appID int64, repos ...string) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.apps[appID]; !ok {
		s.t.Fatalf("githubtest: no App %d", appID)
	}
	in := &installation{id: s.id(), app: appID}
	for _, full := range repos {
		r := s.repoLocked(full, true)
		if in.owner == "" {
			in.owner = r.owner
		}
		in.repos = append(in.repos, strings.ToLower(r.fullName()))
	}
	s.installs = append(s.installs, in)
	return in.id
}

// AddInstallationToken makes token act as an App installation's on every
// repository, posting as bot, as GitHub Actions' GITHUB_TOKEN does
// ("github-actions[bot]").
func (s *Server) AddInstallationToken(token, bot string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]*installToken{}
	}
	s.tokens[token] = &installToken{bot: bot, expires: time.Now().Add(24 * time.Hour)}
}

// SetTokenLifetime sets how long minted installation tokens live (an
// hour by default, as on GitHub). Under a minute makes a client that
// refreshes a minute early mint a new one for every request.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenLife = d
}

// MintedTokens lists the installation tokens handed out, oldest first.
func (s *Server) MintedTokens() []MintedToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.minted)
}

// TestAppKey returns an RSA key for a test App (2048 bits, made once per
// process) and its PKCS#1 PEM, the form GitHub hands out.
func TestAppKey() (*rsa.PrivateKey, []byte) {
	appKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		appKey = k
		appKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	})
	return appKey, bytes.Clone(appKeyPEM)
}

var (
	appKeyOnce sync.Once
	appKey     *rsa.PrivateKey
	appKeyPEM  []byte
)

// identity is who a request acts as.
type identity struct {
	login string // the author of what it posts
	// install is the installation token's grant, nil for a person's token.
	install *installToken
	// app is set when the request authenticated as an App (a JWT).
	app *App
}

type identityKey struct{}

// actor returns the login a request posts as. It takes no lock:
// ServeHTTP set it.
func actor(r *http.Request) string { return identityOf(r).login }

func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(identityKey{}).(identity)
	return id
}

func withIdentity(r *http.Request, id identity) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
}

// sees reports whether a request's identity may see a repository: an
// installation token sees its installation's repositories only.
func (id identity) sees(full string) bool {
	if id.install == nil || id.install.repos == nil {
		return true
	}
	return slices.Contains(id.install.repos, strings.ToLower(full))
}

// appRoute reports whether a path is one an App authenticates to with a
// JWT.
func appRoute(apiPath string) bool {
	if strings.HasPrefix(apiPath, "/app/") || apiPath == "/app" {
		return true
	}
	parts := strings.Split(strings.Trim(apiPath, "/"), "/")
	return len(parts) == 4 && parts[0] == "repos" && parts[3] == "installation"
}

// looksLikeJWT reports whether a bearer credential is a JWT: three
// base64url parts, the first a JSON header.
func looksLikeJWT(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	return err == nil && bytes.HasPrefix(bytes.TrimSpace(h), []byte("{"))
}

// Errors of a JWT, in GitHub's words.
var (
	errJWTDecode  = errors.New("A JSON web token could not be decoded")
	errJWTExpired = errors.New("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	errJWTIssued  = errors.New("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	errJWTTooLong = errors.New("'Expiration time' claim ('exp') is too far in the future")
	errJWTNoApp   = errors.New("Integration not found")
)

// VerifyJWT checks an App's JWT as GitHub does: RS256 signed by the key
// of the App its iss names, iat no later than a minute from now, exp in
// the future and at most ten minutes after iat. It returns the App's id.
func VerifyJWT(tok string, keyOf func(appID int64) (*rsa.PublicKey, bool), now time.Time) (int64, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0, errJWTDecode
	}
	var header struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *json.Number    `json:"iat"`
		Exp *json.Number    `json:"exp"`
	}
	// Strict: a signature spelled two ways is not two signatures.
	enc := base64.RawURLEncoding.Strict()
	hb, err1 := enc.DecodeString(parts[0])
	cb, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "RS256" {
		return 0, errJWTDecode
	}
	dec := json.NewDecoder(bytes.NewReader(cb))
	dec.UseNumber()
	if dec.Decode(&claims) != nil {
		return 0, errJWTDecode
	}
	// GitHub takes the App's id as a number or a string.
	iss := strings.Trim(string(claims.Iss), `"`)
	id, err := strconv.ParseInt(iss, 10, 64)
	if err != nil || id <= 0 {
		return 0, errJWTNoApp
	}
	key, ok := keyOf(id)
	if !ok {
		return 0, errJWTNoApp
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig) != nil {
		return 0, errJWTDecode
	}
	if claims.Iat == nil || claims.Exp == nil {
		return 0, errJWTDecode
	}
	iat, err1 := claims.Iat.Int64()
	exp, err2 := claims.Exp.Int64()
	switch {
	case err1 != nil || time.Unix(iat, 0).After(now.Add(time.Minute)):
		return 0, errJWTIssued
	case err2 != nil || !time.Unix(exp, 0).After(now):
		return 0, errJWTExpired
	case exp-iat > 600:
		return 0, errJWTTooLong
	}
	return id, nil
}

// jwtIssuedAt reads the iat claim of a JWT, zero when tok is not one.
func jwtIssuedAt(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Iat int64 `json:"iat"`
	}
	if err != nil || json.Unmarshal(b, &claims) != nil || claims.Iat == 0 {
		return time.Time{}
	}
	return time.Unix(claims.Iat, 0)
}

// appAuth authenticates a JWT. Call with s.mu held.
func (s *Server) appAuth(tok string) (*App, *authError) {
	id, err := VerifyJWT(tok, func(id int64) (*rsa.PublicKey, bool) {
		a, ok := s.apps[id]
		return a.Key, ok
	}, time.Now())
	if err != nil {
		return nil, &authError{http.StatusUnauthorized, err.Error(), docREST}
	}
	a := s.apps[id]
	return &a, nil
}

const docApps = "https://docs.github.com/rest/apps/apps"

// installationJSON is a GitHub App installation.
type installationJSON struct {
	ID                  int64             `json:"id"`
	Account             userJSON          `json:"account"`
	AccessTokensURL     string            `json:"access_tokens_url"`
	RepositoriesURL     string            `json:"repositories_url"`
	HTMLURL             string            `json:"html_url"`
	AppID               int64             `json:"app_id"`
	AppSlug             string            `json:"app_slug"`
	TargetID            int64             `json:"target_id"`
	TargetType          string            `json:"target_type"`
	Permissions         map[string]string `json:"permissions"`
	Events              []string          `json:"events"`
	SingleFileName      *string           `json:"single_file_name"`
	HasMultipleSingle   bool              `json:"has_multiple_single_files"`
	SingleFilePaths     []string          `json:"single_file_paths"`
	RepositorySelection string            `json:"repository_selection"`
	CreatedAt           string            `json:"created_at"`
	UpdatedAt           string            `json:"updated_at"`
	SuspendedAt         *string           `json:"suspended_at"`
	SuspendedBy         *userJSON         `json:"suspended_by"`
}

// accessTokenJSON is a minted installation token.
type accessTokenJSON struct {
	Token               string            `json:"token"`
	ExpiresAt           string            `json:"expires_at"`
	Permissions         map[string]string `json:"permissions"`
	RepositorySelection string            `json:"repository_selection"`
}

// getInstallation answers GET /repos/{owner}/{repo}/installation for the
// App of the request's JWT.
func (s *Server) getInstallation(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	doc := docApps + "#get-a-repository-installation-for-the-authenticated-app"
	full := strings.ToLower(r.PathValue("owner") + "/" + r.PathValue("repo"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if id.app == nil {
		writeError(w, http.StatusUnauthorized, errJWTDecode.Error(), doc)
		return
	}
	for _, in := range s.installs {
		if in.app == id.app.ID && slices.Contains(in.repos, full) {
			u := s.urlsFor(r)
			writeJSON(w, http.StatusOK, s.installationJSON(u, in, *id.app))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found", doc)
}

// installationJSON renders an installation. Call with s.mu held.
func (s *Server) installationJSON(u urls, in *installation, a App) installationJSON {
	acct := s.user(u, in.owner)
	acct.Type = "Organization"
	return installationJSON{
		ID: in.id, Account: acct,
		AccessTokensURL: fmt.Sprintf("%s/app/installations/%d/access_tokens", u.api, in.id),
		RepositoriesURL: u.api + "/installation/repositories",
		HTMLURL:         fmt.Sprintf("%s/organizations/%s/settings/installations/%d", u.web, in.owner, in.id),
		AppID:           a.ID, AppSlug: a.Slug, TargetID: acct.ID, TargetType: "Organization",
		Permissions: a.Permissions, Events: []string{"issues", "issue_comment", "pull_request_review"},
		SingleFilePaths: []string{}, RepositorySelection: "selected",
		CreatedAt: "2024-01-01T00:00:00Z", UpdatedAt: "2024-01-01T00:00:00Z",
	}
}

// createAccessToken answers POST /app/installations/{id}/access_tokens.
func (s *Server) createAccessToken(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	doc := docApps + "#create-an-installation-access-token-for-an-app"
	n, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id.app == nil {
		writeError(w, http.StatusUnauthorized, errJWTDecode.Error(), doc)
		return
	}
	var in *installation
	for _, x := range s.installs {
		if x.id == n && x.app == id.app.ID {
			in = x
		}
	}
	if in == nil {
		writeError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	// A body may narrow the token to some of the installation's
	// repositories, by name (without the owner).
	var opts struct {
		Repositories []string `json:"repositories"`
	}
	if body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			writeError(w, http.StatusBadRequest, "Problems parsing JSON", doc)
			return
		}
	}
	repos := slices.Clone(in.repos)
	if opts.Repositories != nil {
		repos = nil
		for _, name := range opts.Repositories {
			full := strings.ToLower(in.owner + "/" + name)
			if !slices.Contains(in.repos, full) {
				writeError(w, http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.", doc)
				return
			}
			repos = append(repos, full)
		}
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	tok := "ghs_" + hex.EncodeToString(b)
	life := s.tokenLife
	if life <= 0 {
		life = time.Hour
	}
	exp := time.Now().Add(life).UTC().Truncate(time.Second)
	if s.tokens == nil {
		s.tokens = map[string]*installToken{}
	}
	s.tokens[tok] = &installToken{bot: id.app.Bot(), install: in.id, repos: repos, expires: exp}
	s.minted = append(s.minted, MintedToken{Installation: in.id, Repositories: slices.Clone(repos), ExpiresAt: exp})
	writeJSON(w, http.StatusCreated, accessTokenJSON{Token: tok, ExpiresAt: ts(exp), Permissions: id.app.Permissions, RepositorySelection: "selected"})
}
