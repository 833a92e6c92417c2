package github

import (
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseRemoteURL: any input parses to a valid repository that
// round-trips through ParseRepo, or fails with an error that never shows
// credentials from the input.
func FuzzParseRemoteURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/octo/app.git", "git@github.com:octo/app.git", "ssh://git@github.com:22/octo/app",
		"https://user:pass@ghe.example:8443/o/r", "git://h/o/r", "file:///x", "::", "a:b/c", "https://github.com/o",
		"ssh://[::1]/o/r", "https://%zz/o/r", "git@host:o/r/extra.git",
	} {
		f.Add(s, "ghp_secretToken99")
	}
	f.Fuzz(func(t *testing.T, raw, secret string) {
		r, err := parseRemoteURL(raw)
		if err == nil {
			if !validOwner(r.Owner) || !validName(r.Name) || !validHost(r.Host) || strings.HasSuffix(r.Name, ".git") {
				t.Fatalf("ParseRemoteURL(%q) = %+v, which is not a valid repository", raw, r)
			}
			back, err := ParseRepo(r.Host + "/" + r.Owner + "/" + r.Name)
			if err != nil || back != r {
				t.Fatalf("ParseRepo(%q) = %+v, %v; want %+v", r.Host+"/"+r.String(), back, err, r)
			}
		}
		// Credentials placed in a URL's userinfo never reach the error or
		// the result.
		if len(secret) < 8 || strings.ContainsAny(secret, "@/:?#%[] \t\r\n") || strings.Contains(raw, secret) {
			return
		}
		withCreds := "https://x:" + secret + "@" + strings.TrimPrefix(strings.TrimPrefix(raw, "https://"), "http://")
		if _, err := url.Parse(withCreds); err != nil {
			return
		}
		r2, err := parseRemoteURL(withCreds)
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("ParseRemoteURL(%q) error shows the credentials: %v", withCreds, err)
		}
		if err == nil && strings.Contains(r2.Host+r2.Owner+r2.Name, secret) {
			t.Fatalf("ParseRemoteURL(%q) = %+v keeps the credentials", withCreds, r2)
		}
	})
}

// FuzzParseRepo: an accepted "owner/name" is safe to put in a URL path
// and prints back to what it parsed from.
func FuzzParseRepo(f *testing.F) {
	for _, s := range []string{"octo/app", "octo/app.git", "host.example/o/r", "../x", "o/..", "a/b/c/d", "o/r?x", "-o/r", "o_e/r.s-t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRepo(s)
		if err != nil {
			return
		}
		if err := r.validate(); err != nil {
			t.Fatalf("ParseRepo(%q) = %+v, which validate rejects: %v", s, r, err)
		}
		p := "repos/" + r.Owner + "/" + r.Name
		// No segment may be "." or "..", nor may the name add a query,
		// fragment or another segment.
		if u, err := url.Parse(p); err != nil || u.Path != p || path.Clean(p) != p || strings.Count(p, "/") != 2 {
			t.Fatalf("ParseRepo(%q) = %+v, unsafe in a URL path", s, r)
		}
		again, err := ParseRepo(r.String())
		if err != nil || again.Owner != r.Owner || again.Name != r.Name {
			t.Fatalf("ParseRepo(%q) = %+v, %v; want %+v", r.String(), again, err, r)
		}
	})
}

// FuzzNextLink: the parser never panics, returns a target that was
// inside angle brackets in the header, and finds the next link of a
// well-formed header built around any URL.
func FuzzNextLink(f *testing.F) {
	f.Add(`<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=3>; rel="last"`, "https://h/p?page=2")
	f.Add(`<a>; rel=next`, "a,b;c")
	f.Add(`<<>>;;,,rel="`, "")
	f.Fuzz(func(t *testing.T, h, target string) {
		got, ok := nextLink(h)
		if ok && (!strings.Contains(h, got) || strings.ContainsAny(got, "<>")) {
			t.Fatalf("nextLink(%q) = %q, not a bracketed target of the header", h, got)
		}
		if strings.ContainsAny(target, "<>") || strings.TrimSpace(target) != target {
			return
		}
		built := `<https://x/?page=1>; rel="prev", <` + target + `>; rel="next", <https://x/?page=9>; rel="last"`
		if got, ok := nextLink(built); !ok || got != target {
			t.Fatalf("nextLink(%q) = %q, %v; want %q", built, got, ok, target)
		}
	})
}

// FuzzParseNumber: a number is accepted only when the input spells it
// (bare, after "#", or as the fourth path segment of an issue or pull
// URL of the repository it returns), and it is always positive.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"12", "#12", " 7 ", "0", "-3", "https://github.com/octo/app/pull/24", "https://ghe.example/o/r/issues/9",
		"https://github.com/octo/app/pull/24/files", "http://h/o/r/pulls/x", "ftp://h/o/r/pull/1", "#", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		n, repo, ok := ParseNumber(arg, "issues", "pull", "pulls")
		if !ok {
			if n != 0 && repo != nil {
				t.Fatalf("ParseNumber(%q) failed but returned %d, %v", arg, n, repo)
			}
			return
		}
		if n <= 0 {
			t.Fatalf("ParseNumber(%q) = %d, not positive", arg, n)
		}
		if repo == nil {
			if got, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(arg), "#")); err != nil || got != n {
				t.Fatalf("ParseNumber(%q) = %d without a URL, but the input does not spell it", arg, n)
			}
			return
		}
		u, err := url.Parse(strings.TrimSpace(arg))
		if err != nil {
			t.Fatalf("ParseNumber(%q) accepted a URL that does not parse: %v", arg, err)
		}
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if !strings.EqualFold(parts[0], repo.Owner) || !strings.EqualFold(strings.TrimSuffix(parts[1], ".git"), repo.Name) || parts[3] != strconv.Itoa(n) && strings.TrimLeft(parts[3], "0+") != strconv.Itoa(n) {
			t.Fatalf("ParseNumber(%q) = %d in %+v, which the URL path %q does not name", arg, n, repo, u.Path)
		}
	})
}
