package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// TokenFile is where the generated API token is kept, in the data
// directory, readable by its owner only.
const TokenFile = "api-token"

// LoadToken returns the API token kept in dir, or "" when there is none.
func LoadToken(dir string) (string, error) {
	b, err := safefile.ReadFile(filepath.Join(dir, TokenFile), 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", baton.WrapError(baton.Internal, err, "read the API token in %s", dir)
	}
	return strings.TrimSpace(string(b)), nil
}

// CreateToken generates a token and keeps it in dir with mode 0600. It
// never replaces an existing file (Conflict).
func CreateToken(dir string) (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	tok := "baton_" + hex.EncodeToString(buf)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", baton.WrapError(baton.Internal, err, "create %s", dir)
	}
	if err := safefile.CreateExclusive(filepath.Join(dir, TokenFile), []byte(tok+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", baton.WrapError(baton.Conflict, err, "%s already exists", filepath.Join(dir, TokenFile))
		}
		return "", baton.WrapError(baton.Internal, err, "write the API token")
	}
	return tok, nil
}

// APIToken is the one token rule of baton's HTTP servers (serve and mcp
// --http): env (BATON_API_TOKEN) when set, else the token file serve
// keeps in dataDir, else none. Without a token a server may listen on
// loopback only, so for any other addr no token is Invalid.
func APIToken(env, dataDir, addr string) (string, error) {
	tok := strings.TrimSpace(env)
	if tok == "" && dataDir != "" {
		var err error
		if tok, err = LoadToken(dataDir); err != nil {
			return "", err
		}
	}
	if tok == "" && !IsLoopback(addr) {
		return "", baton.Errorf(baton.Invalid, "%s is not loopback and there is no API token: set BATON_API_TOKEN (or start `baton serve` once on loopback to generate one) so the server is not open to the network", addr)
	}
	return tok, nil
}

// IsLoopback reports whether addr (host:port) binds to the loopback
// interface only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bearerOK reports whether the request carries the API token.
func (s *Server) bearerOK(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && tokenEqual(strings.TrimSpace(tok), s.Token)
}

// bearerOKValue compares a token in constant time.
func (s *Server) bearerOKValue(tok string) bool { return tokenEqual(tok, s.Token) }

func isTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// sameOrigin reports whether a browser request comes from the server's
// own pages: its Origin (or, without one, Sec-Fetch-Site) says so.
// Requests without either header are not from a browser's cross-site
// form, which always sends Origin on POST.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		return o == "http://"+r.Host || o == "https://"+r.Host
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// WrongTokens counts wrong API tokens per client address, for every
// edge that takes the token (serve's API and sign-in, mcp --http): after
// MaxWrongTokens within a minute, further wrong attempts get 429 until
// the minute ends. The right token is checked first and never refused,
// so nobody who tries wrong tokens (any local process shares 127.0.0.1)
// can lock the owner out. The zero value is ready.
type WrongTokens struct {
	mu   sync.Mutex
	seen map[string][]time.Time
}

// MaxWrongTokens wrong tokens from one address within a minute make
// further wrong attempts 429.
const MaxWrongTokens = 10

const failureWindow = time.Minute

// Blocked reports whether addr sent MaxWrongTokens wrong tokens in the
// minute before now.
func (f *WrongTokens) Blocked(addr string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.recent(addr, now)) >= MaxWrongTokens
}

// Add counts a wrong token from addr.
func (f *WrongTokens) Add(addr string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) > 10000 { // bound memory under a spray of addresses
		clear(f.seen)
	}
	f.seen[addr] = append(f.recent(addr, now), now)
}

func (f *WrongTokens) recent(addr string, now time.Time) []time.Time {
	if f.seen == nil {
		f.seen = map[string][]time.Time{}
	}
	ts := f.seen[addr]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > failureWindow {
		i++
	}
	ts = ts[i:]
	f.seen[addr] = ts
	return ts
}

// RequireToken lets a request through to next only with
// "Authorization: Bearer <token>", counting wrong tokens in wrong (429
// after MaxWrongTokens). An empty token lets every request through: the
// server then listens on loopback only (APIToken) and next must refuse
// changes itself. baton mcp --http serves through it.
func RequireToken(token string, wrong *WrongTokens, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if tokenEqual(strings.TrimSpace(tok), token) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close") // the body is never read
		w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "this server needs Authorization: Bearer <token> (BATON_API_TOKEN, or the token `baton serve` keeps in its data directory)", http.StatusUnauthorized)
			return
		}
		ip := clientIP(r)
		if wrong.Blocked(ip, time.Now()) {
			http.Error(w, "too many requests with a wrong token: wait a minute", http.StatusTooManyRequests)
			return
		}
		wrong.Add(ip, time.Now())
		http.Error(w, "wrong API token", http.StatusUnauthorized)
	})
}

// tokenEqual compares a presented token with the server's in constant
// time; no token matches an empty one.
func tokenEqual(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// hostAllowed is the defence against DNS rebinding: a page on
// evil.example whose name the attacker re-points at 127.0.0.1 reaches a
// loopback server from the victim's browser, but the browser still sends
// "Host: evil.example". The server answers only Host names it was given
// (Hosts: the --addr name, the --public-url host), localhost, and IP
// literals: no DNS answer stands behind a literal, so none can be
// rebound. A request without Host (HTTP/1.0) is not from a browser.
func (s *Server) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || host == "localhost" || net.ParseIP(host) != nil {
		return true
	}
	for _, h := range s.Hosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}
