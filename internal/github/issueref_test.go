package github

import (
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/baton-agent/baton"
)

func TestParseIssueURL(t *testing.T) {
	t.Parallel()
	const want = "https://github.com/octo/app/issues/7"
	for _, in := range []string{
		"https://github.com/octo/app/issues/7",
		"https://github.com/octo/app/issues/7/",
		"https://github.com/octo/app/issues/7?x=1",
		"https://github.com/octo/app/issues/7#issuecomment-1",
		"http://github.com/octo/app/issues/7",
		"https://github.com/octo/app/pull/7",
		"https://github.com/OCTO/APP/issues/7",
		"  HTTPS://WWW.GitHub.com:443/Octo/App.git/pull/7/?a=b#c ",
		"https://github.com./octo/app/issues/7",
	} {
		ref, err := ParseIssueURL(in)
		if err != nil || ref.URL() != want || ref.Number != 7 || ref.Repo != (Repo{DefaultHost, "octo", "app"}) {
			t.Errorf("ParseIssueURL(%q) = %+v (%s), %v; want %s", in, ref, ref.URL(), err, want)
		}
	}
	ref, err := ParseIssueURL("https://GHE.Example.com:8443/Team/Svc/issues/3")
	if err != nil || ref.URL() != "https://ghe.example.com:8443/team/svc/issues/3" || ref.String() != "ghe.example.com:8443/team/svc#3" {
		t.Errorf("Enterprise issue = %+v %q, %v", ref, ref.URL(), err)
	}
	for _, in := range []string{
		"", "github.com/octo/app/issues/7", "ftp://github.com/octo/app/issues/7", "https://tok@github.com/octo/app/issues/7",
		"https://github.com/octo/app/issues/0", "https://github.com/octo/app/issues/07", "https://github.com/octo/app/issues/+7",
		"https://github.com/octo/app/issues/7/comments", "https://github.com/octo/app/tree/7", "https://github.com/octo/app/issues",
		"https://github.com/../app/issues/1", "https://github.com/octo/app.git.git/issues/1", "https://github.com/octo//app/issues/1",
		"https://github.com/octo/app/issues/99999999999999999999", "mailto:octo/app/issues/1",
	} {
		if ref, err := ParseIssueURL(in); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseIssueURL(%q) = %+v, %v; want Invalid", in, ref, err)
		}
	}
	if _, err := ParseIssueURL("https://x:ghp_secret123@github.com/o/r/issues/1"); err == nil || strings.Contains(err.Error(), "ghp_secret123") {
		t.Errorf("ParseIssueURL with credentials = %v, want an error without them", err)
	}
}

// FuzzParseIssueURL: the canonical form is a fixed point (it parses back
// to the same issue and prints the same), and every spelling of an
// accepted issue (scheme, case, www, default port, trailing slash, query,
// fragment, /pull/) maps to that one form.
func FuzzParseIssueURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/octo/app/issues/12", "http://h:8080/o/r/pull/1", "https://x/y/z/issues/99999999999999999999",
		"https://GHE.example/Team/Svc.git/issues/3#x", "https://github.com/octo/app/issues/7?x=1", "https://a.b./c/d/pull/2/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseIssueURL(s)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseIssueURL(%q) error code %s", s, baton.ErrorCode(err))
			}
			return
		}
		canon := ref.URL()
		if ref.Number <= 0 || ref.Repo.validate() != nil || !validHost(ref.Repo.Host) {
			t.Fatalf("ParseIssueURL(%q) = %+v, not a valid issue", s, ref)
		}
		again, err := ParseIssueURL(canon)
		if err != nil || again != ref || again.URL() != canon {
			t.Fatalf("ParseIssueURL(%q) = %q, which re-reads as %+v, %v", s, canon, again, err)
		}
		r := ref.Repo
		host := r.Host
		n := strconv.Itoa(ref.Number)
		spellings := []string{
			"http://" + host + "/" + r.Owner + "/" + r.Name + "/issues/" + n,
			"https://" + strings.ToUpper(host) + "/" + strings.ToUpper(r.Owner) + "/" + upperFirst(r.Name) + "/issues/" + n,
			"https://" + host + "/" + r.Owner + "/" + r.Name + "/pull/" + n + "/",
			"https://" + host + "/" + r.Owner + "/" + r.Name + "/issues/" + n + "?x=1#issuecomment-1",
			" " + canon + "/ ",
		}
		if !strings.Contains(host, ":") {
			spellings = append(spellings, "https://"+host+":443/"+r.Owner+"/"+r.Name+"/issues/"+n, "https://"+host+"./"+r.Owner+"/"+r.Name+"/issues/"+n)
		}
		if host == DefaultHost {
			spellings = append(spellings, "https://www.github.com/"+r.Owner+"/"+r.Name+"/issues/"+n)
		}
		for _, sp := range spellings {
			got, err := ParseIssueURL(sp)
			if err != nil || got.URL() != canon {
				t.Fatalf("ParseIssueURL(%q) = %q, %v; want %q (from %q)", sp, got.URL(), err, canon, s)
			}
		}
	})
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return string(unicode.ToUpper(rune(s[0]))) + s[1:]
}
