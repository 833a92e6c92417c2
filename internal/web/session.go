package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/baton-agent/baton"
)

// Dashboard sessions live in the server's memory, not in a cookie's
// signature: signing out ends one at once, a session signed in under
// another API token is refused (token rotation), and a restart signs
// everyone out. The cookie holds only a random id.
//
// Memory rather than the database: the dashboard is served by one
// process (docs/deploy.md runs one server replica), signing in again
// costs the token once, and the database (shared with workers, possibly
// on another machine) then holds nothing that opens the dashboard.
const (
	sessionCookie = "baton_session"
	// sessionIdle ends a session nobody used for this long.
	sessionIdle = 12 * time.Hour
	// sessionMax ends any session this long after sign-in.
	sessionMax = 7 * 24 * time.Hour
	// maxSessions bounds the sessions kept; signing in beyond it ends the
	// least recently used one.
	maxSessions = 1000
)

// session is one signed-in dashboard user.
type session struct {
	Name string
	// CSRF is the token every form of the session carries.
	CSRF string
	// token is a digest of the API token the session signed in with.
	token         [sha256.Size]byte
	created, seen time.Time
}

// sessions are the signed-in dashboard users, by a digest of their
// cookie (a leaked map holds no cookie). The zero value is ready.
type sessions struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

// add stores ss under a new random id and returns the id.
func (st *sessions) add(ss session, now time.Time) string {
	id := randomString()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.m == nil {
		st.m = map[[sha256.Size]byte]*session{}
	}
	if len(st.m) >= maxSessions {
		st.sweep(now)
	}
	if len(st.m) >= maxSessions {
		var oldest [sha256.Size]byte
		first := true
		for k, v := range st.m {
			if first || v.seen.Before(st.m[oldest].seen) {
				oldest, first = k, false
			}
		}
		delete(st.m, oldest)
	}
	ss.created, ss.seen = now, now
	st.m[sha256.Sum256([]byte(id))] = &ss
	return id
}

// get returns the live session of id signed in under token, and marks
// it used. Expired sessions and sessions of another token are removed.
func (st *sessions) get(id string, token [sha256.Size]byte, now time.Time) (session, bool) {
	key := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	ss := st.m[key]
	if ss == nil {
		return session{}, false
	}
	if ss.token != token || expired(ss, now) {
		delete(st.m, key)
		return session{}, false
	}
	ss.seen = now
	return *ss, true
}

// end removes the session of id.
func (st *sessions) end(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.m, sha256.Sum256([]byte(id)))
}

func (st *sessions) sweep(now time.Time) {
	for k, v := range st.m {
		if expired(v, now) {
			delete(st.m, k)
		}
	}
}

func expired(ss *session, now time.Time) bool {
	return now.Sub(ss.seen) > sessionIdle || now.Sub(ss.created) > sessionMax
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) tokenDigest() [sha256.Size]byte { return sha256.Sum256([]byte(s.Token)) }

// newSession signs name in: a new server-side session and its cookie.
func (s *Server) newSession(w http.ResponseWriter, r *http.Request, name string) {
	id := s.sessions.add(session{Name: baton.Truncate(name, 64, ""), CSRF: randomString(), token: s.tokenDigest()}, s.now())
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: isTLS(r), MaxAge: int(sessionMax / time.Second),
	})
}

// endSession signs the request's session out, on the server and in the
// browser.
func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: isTLS(r), MaxAge: -1})
}

// sessionOf returns the request's live session, if any.
func (s *Server) sessionOf(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || s.Token == "" || c.Value == "" {
		return session{}, false
	}
	return s.sessions.get(c.Value, s.tokenDigest(), s.now())
}

// csrfToken is the token every form of a session carries.
func (s *Server) csrfToken(ss session) string { return ss.CSRF }
