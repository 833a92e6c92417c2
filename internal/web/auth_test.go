package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/sqlstore"
)

// clock is a settable time for Server.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// signIn posts the sign-in form and returns the answer's status and the
// session cookie it set, if any.
func (e *env) signIn(tok string) (int, *http.Cookie) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/login", strings.NewReader(url.Values{"token": {tok}, "name": {"alice"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	resp, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "baton_session" && c.Value != "" {
			return resp.StatusCode, c
		}
	}
	return resp.StatusCode, nil
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// withCookie sends a request carrying the session cookie (and its CSRF
// token, for a change) and returns the status.
func (e *env) withCookie(c *http.Cookie, method, path, csrf string) int {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	req.AddCookie(c)
	resp, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// csrfOf reads the CSRF token of the session's pages.
func (e *env) csrfOf(c *http.Cookie) string {
	e.t.Helper()
	jar := &cookieJar{cookie: c}
	page := get(e.t.(*testing.T), &http.Client{Jar: jar}, e.srv.URL+"/settings")
	tok := between(page, `name="csrf" value="`, `"`)
	if tok == "" {
		e.t.Fatal("the settings page of a signed-in session has no CSRF token")
	}
	return tok
}

// Sessions are the server's: signing out ends one for good, an idle one
// ends after 12 hours, a new API token ends them all, and there are at
// most a thousand.
func TestSessionsEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	clk := &clock{t: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	e.web.Now = clk.Now
	e.web.Open = false // every read needs the token or a session
	d := e.create("Keep me open")

	t.Run("sign-out", func(t *testing.T) {
		_, c := e.signIn(token)
		if c == nil || e.withCookie(c, "GET", "/api/deliveries", "") != http.StatusOK {
			t.Fatal("signing in gave no working session")
		}
		csrf := e.csrfOf(c)
		if got := e.withCookie(c, "POST", "/logout", csrf); got != http.StatusSeeOther {
			t.Fatalf("sign-out = %d, want 303", got)
		}
		// The browser forgot the cookie; whoever copied it keeps trying.
		if got := e.withCookie(c, "GET", "/api/deliveries", ""); got != http.StatusUnauthorized {
			t.Errorf("a read with the signed-out cookie = %d, want 401", got)
		}
		if got := e.withCookie(c, "POST", "/deliveries/"+d.ID+"/close", csrf); got != http.StatusUnauthorized {
			t.Errorf("a change with the signed-out cookie and its form token = %d, want 401", got)
		}
		if cur, _ := e.svc.Current(t.Context(), d.ID); cur.Phase == "close" {
			t.Error("the signed-out session closed the delivery")
		}
	})

	t.Run("idle", func(t *testing.T) {
		_, c := e.signIn(token)
		for range 2 { // used every 11 hours, it lives on
			clk.Add(11 * time.Hour)
			if got := e.withCookie(c, "GET", "/api/deliveries", ""); got != http.StatusOK {
				t.Fatalf("a session used 11 hours ago = %d, want 200", got)
			}
		}
		clk.Add(12*time.Hour + time.Second)
		if got := e.withCookie(c, "GET", "/api/deliveries", ""); got != http.StatusUnauthorized {
			t.Errorf("a session idle for over 12 hours = %d, want 401", got)
		}
	})

	t.Run("token rotation", func(t *testing.T) {
		_, c := e.signIn(token)
		e.web.Token = "baton_rotated"
		defer func() { e.web.Token = token }()
		if got := e.withCookie(c, "GET", "/api/deliveries", ""); got != http.StatusUnauthorized {
			t.Errorf("a session of the old token = %d, want 401", got)
		}
	})

	t.Run("bounded", func(t *testing.T) {
		_, first := e.signIn(token)
		for range 1000 {
			clk.Add(time.Second)
			if code, c := e.signIn(token); c == nil {
				t.Fatalf("sign-in = %d without a session", code)
			}
		}
		if got := e.withCookie(first, "GET", "/api/deliveries", ""); got != http.StatusUnauthorized {
			t.Errorf("the least recently used of 1,001 sessions = %d, want 401 (ended to keep 1,000)", got)
		}
	})
}

// Wrong tokens from any local process (they all come from 127.0.0.1)
// slow down only wrong tokens: the owner's token still signs in.
func TestWrongTokensDoNotLockTheOwnerOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	for i := range 10 {
		if code, _ := e.signIn("baton_guess"); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d = %d, want 401", i+1, code)
		}
	}
	if code, _ := e.signIn("baton_guess"); code != http.StatusTooManyRequests {
		t.Errorf("the 11th wrong token = %d, want 429", code)
	}
	if code, c := e.signIn(token); code != http.StatusSeeOther || c == nil {
		t.Errorf("the right token after ten wrong ones = %d (cookie %v), want 303 and a session", code, c != nil)
	}
	// The same for the API's bearer token.
	e.wantError("POST", "/api/deliveries", `{}`, false, http.StatusUnauthorized, "unauthorized")
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/deliveries", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer baton_guess")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a wrong bearer token after ten = %v %v, want 429", resp.Status, err)
	}
	if d := e.create("Still the owner's"); d.ID == "" {
		t.Error("the right bearer token was refused")
	}
}

// On a bind that is not loopback every page needs a session, except the
// one that makes it: /login and its assets answer without one.
func TestSignInPageNeedsNoSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	e.web.Open = false
	for _, path := range []string{"/login", "/login?next=%2Fsettings", "/static/style.css", "/static/live.js"} {
		resp, err := noRedirect.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s on a closed server = %d (Location %q), want 200", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	page := get(t, noRedirect, e.srv.URL+"/login")
	if !strings.Contains(page, `action="/login"`) {
		t.Error("the sign-in page has no sign-in form")
	}
	// Where the token is kept, in words: anyone who reaches the port
	// reads this page, and the data directory's path is not theirs.
	if !strings.Contains(page, "&lt;data dir&gt;/api-token") || strings.Contains(page, e.svc.DataDir) {
		t.Errorf("the sign-in page does not say <data dir>/api-token, or shows the data directory:\n%s", page)
	}
	// Everything else still sends people there.
	resp, err := noRedirect.Get(e.srv.URL + "/settings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?") {
		t.Errorf("GET /settings on a closed server = %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
}
