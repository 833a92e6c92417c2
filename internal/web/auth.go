package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
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

// Session cookies are signed, not stored: name|expiry|nonce|mac, with
// the MAC keyed by the API token, so they survive a restart and die with
// the token.
const (
	sessionCookie = "baton_session"
	sessionTTL    = 7 * 24 * time.Hour
)

type session struct {
	Name   string
	Nonce  string
	Expiry time.Time
}

func (s *Server) mac(parts ...string) string {
	m := hmac.New(sha256.New, []byte(s.Token))
	m.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) newSession(w http.ResponseWriter, r *http.Request, name string) {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	n := base64.RawURLEncoding.EncodeToString(nonce)
	exp := strconv.FormatInt(s.now().Add(sessionTTL).Unix(), 10)
	name = base64.RawURLEncoding.EncodeToString([]byte(baton.Truncate(name, 64, "")))
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: strings.Join([]string{name, exp, n, s.mac("session", name, exp, n)}, "."),
		Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: isTLS(r), MaxAge: int(sessionTTL / time.Second),
	})
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: isTLS(r), MaxAge: -1})
}

// sessionOf returns the request's valid session, if any.
func (s *Server) sessionOf(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || s.Token == "" {
		return session{}, false
	}
	p := strings.Split(c.Value, ".")
	if len(p) != 4 || !hmac.Equal([]byte(p[3]), []byte(s.mac("session", p[0], p[1], p[2]))) {
		return session{}, false
	}
	exp, err := strconv.ParseInt(p[1], 10, 64)
	if err != nil || s.now().Unix() > exp {
		return session{}, false
	}
	name, _ := base64.RawURLEncoding.DecodeString(p[0])
	return session{Name: string(name), Nonce: p[2], Expiry: time.Unix(exp, 0)}, true
}

// csrfToken is the token every form of a session carries.
func (s *Server) csrfToken(ss session) string { return s.mac("csrf", ss.Nonce) }

// bearerOK reports whether the request carries the API token.
func (s *Server) bearerOK(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return ok && s.Token != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.Token)) == 1
}

// bearerOKValue compares a token in constant time.
func (s *Server) bearerOKValue(tok string) bool {
	return s.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.Token)) == 1
}

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

// failures limits wrong tokens per client address: after maxFailures
// within failureWindow, further attempts get 429 until the window ends.
type failures struct {
	mu   sync.Mutex
	seen map[string][]time.Time
}

const (
	maxFailures   = 10
	failureWindow = time.Minute
)

func (f *failures) blocked(ip string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.recent(ip, now)) >= maxFailures
}

func (f *failures) add(ip string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) > 10000 { // bound memory under a spray of addresses
		clear(f.seen)
	}
	f.seen[ip] = append(f.recent(ip, now), now)
}

func (f *failures) recent(ip string, now time.Time) []time.Time {
	if f.seen == nil {
		f.seen = map[string][]time.Time{}
	}
	ts := f.seen[ip]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > failureWindow {
		i++
	}
	ts = ts[i:]
	f.seen[ip] = ts
	return ts
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
