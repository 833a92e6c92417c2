package web

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// A create request the decoder accepts decodes again to the same value,
// never carries a field that chooses what runs (in any spelling), and
// turns into a service request that names no agent or command and no
// directory outside the server's repositories.
func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{
		`{"repo":"/srv/app","summary":"Add a health endpoint"}`,
		`{"issue_url":"https://github.com/octo/app/issues/7"}`,
		`{"repo":"/srv/app/sub","summary":"x","endpoint":"review","checkpoints":[]}`,
		`{"repo":"/srv/app","summary":"x","checkpoints":["plan","deploy"]}`,
		`{"repo":"/srv/app/../etc","summary":"x"}`,
		`{"repo":"/srv/app","summary":"x","Agent":"command:sh"}`,
		`{"repo":"/srv/app","summary":"x","agent":"command:sh"}`,
		`{"summary":"x"} {"agent":"claude"}`,
		`{"summary":"a","summary":"b"}`,
		`[]`, `null`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	srv := &Server{Repos: []string{"/srv/app"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := DecodeCreate(body)
		if err != nil {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
			t.Fatalf("accepted a body that is not a JSON object: %q", body)
		}
		for k := range raw {
			for _, bad := range forbiddenFields {
				if strings.EqualFold(k, bad) {
					t.Fatalf("accepted the refused field %q in %q", k, body)
				}
			}
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := DecodeCreate(again)
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip: %q decoded to %#v, re-encoded %s, decoded to %#v (%v)", body, c, again, c2, err)
		}
		req, err := srv.request(c, "fuzz")
		if err != nil {
			return
		}
		if req.Repo != "" && req.Repo != "/srv/app" && !strings.HasPrefix(req.Repo, "/srv/app/") {
			t.Fatalf("request %q reaches %q, outside the server's repositories", body, req.Repo)
		}
		if req.Repo != "" && req.Repo != filepath.Clean(req.Repo) {
			t.Fatalf("request %q names an unclean path %q", body, req.Repo)
		}
		set := req.Settings
		set.Endpoint, set.Checkpoints = nil, nil
		if !reflect.DeepEqual(set, delivery.Settings{}) {
			t.Fatalf("request %q chose settings a caller must not: %+v", body, set)
		}
	})
}

// A source, settings or action body the decoders accept decodes again to
// the same value: nothing is lost or invented on the way.
func FuzzDecodeSource(f *testing.F) {
	for _, s := range []string{
		`{"repo":"octo/app","label":"baton","checkpoints":["plan"],"paused":true}`,
		`{"api_url":"https://ghe.example/api/v3/","webhook_secret":"s","agent":"codex"}`,
		`{"checkpoints":[]}`, `{"label":""}`, `{"endpoint":null}`, `{}`, `{"repo":1}`, `{"x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		roundTrip(t, body, DecodeSource)
	})
}

func FuzzDecodeSettings(f *testing.F) {
	for _, s := range []string{`{"polling":true,"poll_every_seconds":30}`, `{"poll_every_seconds":1e400}`, `{}`, `{"polling":"yes"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		roundTrip(t, body, DecodeSettings)
	})
}

// Whatever a settings body or the settings form says, the stored poll
// interval stays within the documented range.
func FuzzSettingsStayInRange(f *testing.F) {
	for _, s := range []string{"30", "1e300", "-5", "NaN", "Inf", "9.999", "86400", "86400.5", "0x1p-2"} {
		f.Add(s)
	}
	q, err := queue.Open(f.Context(), sqlstoretest.DSN(f, sqlstore.SQLite), queue.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(q.Close)
	in := &intake.Service{Deliveries: &delivery.Service{Queue: q, DataDir: f.TempDir()}}
	srv := &Server{Intake: in, Deliveries: in.Deliveries}
	f.Fuzz(func(t *testing.T, secs string) {
		form := url.Values{"polling": {"on"}, "poll_every_seconds": {secs}}
		r := httptest.NewRequest("POST", "/settings", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		_ = srv.formSettings(httptest.NewRecorder(), r)
		if body, err := DecodeSettings([]byte(`{"poll_every_seconds":` + secs + `}`)); err == nil {
			r := httptest.NewRequest("PATCH", "/api/settings", nil)
			_ = srv.applySettings(r, body)
		}
		st, err := in.Settings(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.PollEvery < intake.MinPollEvery || st.PollEvery > 24*time.Hour {
			t.Fatalf("%q stored a poll interval of %s", secs, st.PollEvery)
		}
	})
}

func FuzzDecodeAction(f *testing.F) {
	for _, s := range []string{`{"reason":"not now"}`, ``, `  `, `{}`, `{"reason":1}`, `{"reason":"a"}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		roundTrip(t, body, DecodeAction)
	})
}

// A message body decodes to the text it holds, and to nothing else: a
// field baton does not know is refused, not dropped.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{`{"text":"use tabs"}`, ``, `{}`, `{"text":1}`, `{"text":"a","reason":"b"}`, `{"text":"a"}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		roundTrip(t, body, DecodeMessage)
		m, err := DecodeMessage(body)
		if err != nil {
			return
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) != nil {
			t.Fatalf("DecodeMessage(%q) = %+v, but the body is not one JSON object", body, m)
		}
		for k := range fields {
			if !strings.EqualFold(k, "text") { // encoding/json matches names without case
				t.Fatalf("DecodeMessage(%q) accepted the field %q", body, k)
			}
		}
	})
}

func roundTrip[T any](t *testing.T, body []byte, decode func([]byte) (T, error)) {
	t.Helper()
	v, err := decode(body)
	if err != nil {
		return
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := decode(again)
	if err != nil || !reflect.DeepEqual(v, v2) {
		t.Fatalf("round trip: %q decoded to %#v, re-encoded %s, decoded to %#v (%v)", body, v, again, v2, err)
	}
}

// The list query accepts only what it documents: a limit in range, a
// positive cursor, and a known state.
func FuzzListFilter(f *testing.F) {
	for _, s := range []string{"limit=2&cursor=5", "state=closed&q=x", "limit=0", "limit=999", "cursor=-1", "state=open", "phase=plan&status=failed", "q=%ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/api/deliveries", nil)
		r.URL.RawQuery = query
		fl, err := listFilter(r)
		if err != nil {
			return
		}
		if fl.Limit < 1 || fl.Limit > maxPage || fl.BeforeSeq < 0 || len(fl.Search) > 200 || (fl.Open && fl.Closed) {
			t.Fatalf("query %q gave filter %+v", query, fl)
		}
	})
}

// Where sign-in leads is always a path on this server, as a browser
// reads it: it drops tabs and newlines and takes a backslash for a slash.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/deliveries/abc?x=1", "//evil.example", "/\\evil.example", "/\t/evil.example", "/\n/evil.example", "https://evil.example", "/%2F%2Fevil", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		seen := strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(got)
		u, err := url.Parse(seen)
		if err != nil || !strings.HasPrefix(seen, "/") || strings.HasPrefix(seen, "//") || u.Host != "" || u.Scheme != "" {
			t.Fatalf("safeNext(%q) = %q, which a browser reads as %q: off the site", next, got, seen)
		}
		if got != "/" && got != next {
			t.Fatalf("safeNext(%q) = %q: rewrote a path instead of keeping or refusing it", next, got)
		}
	})
}

// The Host rule accepts exactly localhost, IP literals and the names it
// was given, whatever the case and port: a name a page could rebind is
// never let through, and the names people use always are.
func FuzzHostAllowed(f *testing.F) {
	for _, h := range []string{"evil.example:7070", "localhost", "LOCALHOST:7070", "127.0.0.1:7070", "[::1]:7070", "::1",
		"baton.example.com", "baton.example.com.", "baton.example.com.evil.example", "localhost.evil.example", "0x7f.0.0.1",
		"127.0.0.1.nip.io", "", ":7070", "[fe80::1%25eth0]:80", "10.0.0.5"} {
		f.Add(h)
	}
	s := &Server{Hosts: []string{"baton.example.com"}}
	upper := func(h string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		ok := s.hostAllowed(h)
		if ok != s.hostAllowed(upper(h)) {
			t.Fatalf("hostAllowed(%q) = %v but %v for %q", h, ok, !ok, upper(h))
		}
		name := strings.ToLower(h)
		if hh, _, err := net.SplitHostPort(name); err == nil {
			name = hh
		}
		name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
		known := name == "" || name == "localhost" || name == "baton.example.com" || net.ParseIP(name) != nil
		if ok != known {
			t.Fatalf("hostAllowed(%q) = %v for the name %q", h, ok, name)
		}
		if ok && !strings.ContainsAny(h, ":[]") && !s.hostAllowed(h+":7070") {
			t.Fatalf("hostAllowed(%q) = true but false with a port", h)
		}
	})
}

// FuzzParseWatch: a watch list parses only into valid ids with
// non-negative positions, never more than maxWatched, and a list built
// from such pairs parses back to them.
func FuzzParseWatch(f *testing.F) {
	for _, s := range []string{"", "abcdef123456:0", "abcdef123456:3,0123456789ab:10", "x:1", "abcdef123456:-1", ":", ",,"} {
		f.Add(s, "abcdef123456", int64(4))
	}
	f.Fuzz(func(t *testing.T, v, id string, after int64) {
		got, err := parseWatch(v)
		if err == nil {
			if len(got) > maxWatched {
				t.Fatalf("parseWatch(%q) kept %d deliveries", v, len(got))
			}
			for k, n := range got {
				if !baton.ValidID(k) || n < 0 {
					t.Fatalf("parseWatch(%q) kept %q:%d", v, k, n)
				}
			}
		}
		if !baton.ValidID(id) || strings.ContainsAny(id, ":,") || after < 0 {
			return
		}
		back, err := parseWatch(id + ":" + strconv.FormatInt(after, 10))
		if err != nil || len(back) != 1 || back[id] != after {
			t.Fatalf("parseWatch(%s:%d) = %v, %v", id, after, back, err)
		}
	})
}

// FuzzAcceptsGzip: gzip is taken exactly when a header lists it (or *)
// without q=0.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip, deflate, br", "br;q=1, gzip;q=0", "*", "identity", "GZIP ; q=0.5", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		got := acceptsGzip(h)
		if !strings.Contains(strings.ToLower(h), "gzip") && !strings.Contains(h, "*") && got {
			t.Fatalf("acceptsGzip(%q) = true, but it names no gzip", h)
		}
		if got && strings.Contains(strings.ReplaceAll(h, " ", ""), "gzip;q=0,") {
			t.Fatalf("acceptsGzip(%q) = true for q=0", h)
		}
		if !acceptsGzip(h+", gzip") && !strings.Contains(strings.ToLower(h), "gzip") && !strings.Contains(h, "*") {
			t.Fatalf("acceptsGzip(%q + gzip) = false", h)
		}
	})
}

// FuzzDiffChunks: the groups of a patch hold its lines in order, each
// group 64, 32, 16, 8, 4, 2 or 1 lines (the sizes style.css knows the
// height of), largest first.
func FuzzDiffChunks(f *testing.F) {
	for _, s := range []string{"", "@@ -1 +1 @@\n-a\n+b\n", strings.Repeat("+x\n", 64), strings.Repeat("+x\n", 200) + " y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		want := diffLines(patch)
		var got []diffLine
		prev := 64
		for _, g := range diffChunks(patch) {
			n := len(g)
			if n == 0 || n > prev || n&(n-1) != 0 {
				t.Fatalf("a group of %d lines after one of %d", n, prev)
			}
			prev = n
			got = append(got, g...)
		}
		if !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("the groups hold %d lines, the patch %d", len(got), len(want))
		}
	})
}
