package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// DefaultHost is the web host of github.com. A Repo with an empty Host
// lives there.
const DefaultHost = "github.com"

// Repo names a GitHub repository.
type Repo struct {
	// Host is the web host: "github.com" or a GitHub Enterprise Server
	// host (with a port when the remote named one over http(s)).
	Host  string
	Owner string
	Name  string
}

// String returns "owner/name", the form GitHub and gh use in messages.
func (r Repo) String() string { return r.Owner + "/" + r.Name }

// validate reports whether r can be put into an API path. It guards
// against path traversal ("..") and query injection through names that
// come from flags or remotes.
func (r Repo) validate() error {
	if !validOwner(r.Owner) || !validName(r.Name) {
		return baton.Errorf(baton.Invalid, "bad repository %q: want owner/name", baton.Truncate(r.String(), 200, "…"))
	}
	return nil
}

// ParseRepo parses a repository named as "owner/name" or
// "host/owner/name" (the forms gh's --repo accepts), or as a clone URL
// (see ParseRemoteURL). A trailing ".git" is dropped. Errors are Invalid.
func ParseRepo(s string) (Repo, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, "/")
	hostForm := len(parts) == 3 && validHost(normalizeHost(parts[0])) && !strings.Contains(s, "@")
	if strings.Contains(s, "://") || !hostForm && looksSCP(s) {
		return parseRemoteURL(s)
	}
	var r Repo
	switch len(parts) {
	case 2:
		r = Repo{Host: DefaultHost, Owner: parts[0], Name: parts[1]}
	case 3:
		r = Repo{Host: normalizeHost(parts[0]), Owner: parts[1], Name: parts[2]}
		if !validHost(r.Host) {
			return Repo{}, baton.Errorf(baton.Invalid, "bad repository %q: %q is not a host name", baton.Truncate(s, 200, "…"), baton.Truncate(parts[0], 100, "…"))
		}
	default:
		return Repo{}, baton.Errorf(baton.Invalid, "bad repository %q: want owner/name or host/owner/name", baton.Truncate(s, 200, "…"))
	}
	r.Name = strings.TrimSuffix(r.Name, ".git")
	if err := r.validate(); err != nil {
		return Repo{}, err
	}
	return r, nil
}

// parseRemoteURL parses a git remote URL that points at a GitHub
// repository:
//
//	https://github.com/owner/name(.git)    http(s), with or without credentials
//	git@github.com:owner/name.git          scp-like ssh
//	ssh://git@github.com(:22)/owner/name.git
//	git://github.com/owner/name.git
//
// Any host is accepted, so GitHub Enterprise remotes work; ssh.github.com
// and www.github.com map to github.com. Credentials in the URL are dropped
// and never repeated in an error. Errors are Invalid.
func parseRemoteURL(raw string) (Repo, error) {
	raw = strings.TrimSpace(raw)
	var host, p string
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return Repo{}, remoteError(raw, "not a URL")
		}
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
			host = webHostPort(u) // the default port names the same host
		case "ssh", "git", "git+ssh", "ssh+git":
			host = u.Hostname()
		default:
			return Repo{}, remoteError(raw, fmt.Sprintf("unsupported scheme %q", baton.Truncate(u.Scheme, 20, "…")))
		}
		p = u.Path
	} else if looksSCP(raw) {
		// [user@]host:path, as git itself reads it: no scheme, and a colon
		// before the first slash.
		hostPart, rest, _ := strings.Cut(raw, ":")
		if i := strings.LastIndex(hostPart, "@"); i >= 0 {
			hostPart = hostPart[i+1:]
		}
		host, p = hostPart, rest
	} else {
		return Repo{}, remoteError(raw, "not a GitHub remote (want https://host/owner/name or git@host:owner/name)")
	}
	host = normalizeHost(host)
	if !validHost(host) {
		return Repo{}, remoteError(raw, "no valid host")
	}
	p = strings.Trim(p, "/")
	p = strings.TrimSuffix(p, ".git")
	parts := strings.Split(p, "/")
	if len(parts) != 2 {
		return Repo{}, remoteError(raw, "the path is not owner/name")
	}
	r := Repo{Host: host, Owner: parts[0], Name: parts[1]}
	if !validOwner(r.Owner) || !validName(r.Name) {
		return Repo{}, remoteError(raw, "the path is not owner/name")
	}
	return r, nil
}

// webHostPort returns u's host lower-cased, without the scheme's default
// port, as Repo.Host spells it.
func webHostPort(u *url.URL) string {
	h := strings.ToLower(u.Host)
	if p := u.Port(); p == "443" && strings.EqualFold(u.Scheme, "https") || p == "80" && strings.EqualFold(u.Scheme, "http") {
		h = strings.ToLower(u.Hostname())
	}
	return h
}

// gitTimeout bounds `git remote get-url`, which reads local config only.
const gitTimeout = 10 * time.Second

// repoFromRemote returns the repository that the origin remote of the git
// repository at dir points at, by running `git remote get-url origin`.
// It returns NotFound when dir is not a git repository or has no origin
// remote, and Invalid when origin is not a GitHub URL or git is missing.
func repoFromRemote(ctx context.Context, dir string) (Repo, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "remote", "get-url", "origin")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return Repo{}, baton.WrapError(baton.Invalid, err, "git is not installed: pass --repo owner/name")
	case errors.As(err, &exitErr):
		// git prints "No such remote 'origin'" or "not a git repository";
		// both mean there is nothing to read here.
		msg := strings.TrimSpace(firstLine(stderr.String()))
		return Repo{}, baton.Errorf(baton.NotFound, "no origin remote in %s (%s): pass --repo owner/name", dir, baton.Truncate(scrubCredentials(msg), 200, "…"))
	case err != nil:
		return Repo{}, baton.WrapError(baton.Internal, err, "run git remote get-url origin in %s", dir)
	}
	r, err := parseRemoteURL(stdout.String())
	if err != nil {
		return Repo{}, baton.WrapError(baton.Invalid, err, "origin remote of %s", dir)
	}
	return r, nil
}

// remoteError reports a remote URL that cannot be used, showing the URL
// without its credentials: an https remote may embed a token.
func remoteError(raw, why string) error {
	return baton.Errorf(baton.Invalid, "bad git remote %q: %s", baton.Truncate(scrubCredentials(raw), 200, "…"), why)
}

// scrubCredentials removes the userinfo of anything URL-shaped in s. It is
// deliberately blunt: everything before the last "@" of each
// whitespace-separated word that contains "@" is dropped, so a token can
// never survive however the URL is mangled.
func scrubCredentials(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		at := strings.LastIndex(w, "@")
		if at < 0 {
			continue
		}
		prefix := ""
		if j := strings.Index(w[:at], "://"); j >= 0 {
			prefix = w[:j+3]
		}
		words[i] = prefix + w[at+1:]
	}
	return strings.Join(words, " ")
}

// looksSCP reports whether s is git's scp-like syntax, [user@]host:path:
// a colon before any slash, and no "://".
func looksSCP(s string) bool {
	colon := strings.Index(s, ":")
	if colon <= 0 || strings.Contains(s, "://") {
		return false
	}
	slash := strings.Index(s, "/")
	return slash < 0 || colon < slash
}

// normalizeHost lowercases h, drops the trailing dot of a fully
// qualified name, and maps GitHub's alternative ssh and web hosts to
// github.com.
func normalizeHost(h string) string {
	h = strings.ToLower(h)
	if name, port, ok := strings.Cut(h, ":"); ok {
		h = strings.TrimSuffix(name, ".") + ":" + port
	} else {
		h = strings.TrimSuffix(h, ".")
	}
	switch h {
	case "ssh.github.com", "www.github.com", "ssh.github.com:443":
		return DefaultHost
	}
	return h
}

// validHost accepts a DNS name or IPv4 address with an optional port.
func validHost(h string) bool {
	name, port, hasPort := strings.Cut(h, ":")
	if name == "" || len(name) > 253 {
		return false
	}
	if hasPort && (port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "") {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	// No empty label: normalizeHost has dropped a fully qualified name's
	// one trailing dot, and "a..b" names nothing.
	return name[0] != '-' && name[0] != '.' && name[len(name)-1] != '.' && !strings.Contains(name, "..")
}

// validOwner accepts GitHub user and organization names: letters, digits
// and hyphens, plus underscores for Enterprise Managed Users
// ("octocat_acme"). It never starts with a hyphen.
func validOwner(s string) bool {
	if s == "" || len(s) > 100 || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(isAlnum(c) || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validName accepts repository names: letters, digits, '.', '-', '_', not
// "." or "..".
func validName(s string) bool {
	if s == "" || len(s) > 100 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(isAlnum(c) || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// resolveRepo says which repository a command means: the one an argument's
// URL named (fromArg), else repoArg ("owner/name", as --repo takes it),
// else the origin remote of the checkout at dir. named is set when it came
// from the caller rather than the checkout, so suggested commands must
// name it too. A URL and a repoArg that disagree are Invalid.
func resolveRepo(ctx context.Context, dir, repoArg string, fromArg *Repo) (r Repo, named bool, err error) {
	switch {
	case fromArg != nil:
		if repoArg != "" {
			r, err := ParseRepo(repoArg)
			if err != nil {
				return Repo{}, false, err
			}
			if !strings.EqualFold(r.String(), fromArg.String()) {
				return Repo{}, false, baton.Errorf(baton.Invalid, "the URL names %s but --repo names %s", fromArg, r)
			}
		}
		return *fromArg, true, nil
	case repoArg != "":
		r, err := ParseRepo(repoArg)
		return r, err == nil, err
	}
	r, err = repoFromRemote(ctx, dir)
	return r, false, err
}

// ParseNumber reads an issue or pull request named as "12", "#12", or a
// web URL (https://github.com/owner/name/pull/12), which also names the
// repository. kinds are the URL path words accepted ("pull", "issues").
func ParseNumber(arg string, kinds ...string) (int, *Repo, bool) {
	s := strings.TrimSpace(arg)
	if n, err := strconv.Atoi(strings.TrimPrefix(s, "#")); err == nil {
		return n, nil, n > 0
	}
	r, rest, ok := parseWebURL(s)
	if !ok || len(rest) < 2 || !slices.Contains(kinds, rest[0]) {
		return 0, nil, false
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil || n <= 0 {
		return 0, nil, false
	}
	return n, &r, true
}

// parseWebURL reads an http(s) URL of a page of a repository on a GitHub
// host: https://HOST/owner/name/rest... It returns the repository (host
// normalized as ParseRemoteURL does, owner and name as written, less a
// ".git") and the path segments after it. URLs with credentials are refused.
func parseWebURL(s string) (Repo, []string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return Repo{}, nil, false
	}
	if scheme := strings.ToLower(u.Scheme); scheme != "https" && scheme != "http" {
		return Repo{}, nil, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 {
		return Repo{}, nil, false
	}
	// A clone URL's ".git" names the same repository; what is left must
	// not end in ".git" again, or the name would change on every reading.
	r := Repo{Host: normalizeHost(webHostPort(u)), Owner: parts[0], Name: trimGit(parts[1])}
	if !validHost(r.Host) || r.validate() != nil || trimGit(r.Name) != r.Name {
		return Repo{}, nil, false
	}
	return r, parts[2:], true
}

// trimGit drops a ".git" suffix in any case.
func trimGit(name string) string {
	if len(name) >= 4 && strings.EqualFold(name[len(name)-4:], ".git") {
		return name[:len(name)-4]
	}
	return name
}

// IssueRef identifies one GitHub issue: its host, its repository and its
// number. Owner and name are lower-cased, as GitHub matches them without
// regard to case, so every spelling of an issue's URL gives one IssueRef.
// Pull requests share the issues' number space (pull request 7 is issue
// 7 of the same repository, and GitHub's issue API answers for it), so a
// pull request's URL names the issue of its number.
type IssueRef struct {
	Repo   Repo
	Number int
}

// URL returns the issue's canonical web URL,
// https://HOST/owner/name/issues/N, the one spelling ParseIssueURL maps
// every other to.
func (r IssueRef) URL() string {
	return "https://" + hostOrDefault(r.Repo.Host) + "/" + r.Repo.Owner + "/" + r.Repo.Name + "/issues/" + strconv.Itoa(r.Number)
}

// String returns owner/name#N, with the host first for GitHub Enterprise.
func (r IssueRef) String() string {
	s := r.Repo.String() + "#" + strconv.Itoa(r.Number)
	if r.Repo.Host != "" && r.Repo.Host != DefaultHost {
		s = r.Repo.Host + "/" + s
	}
	return s
}

// ParseIssueURL reads an issue's web URL in the spellings people paste
// and GitHub sends: http or https, any case of host, owner and name,
// www.github.com, a default port, a trailing slash, a query, a fragment
// (#issuecomment-1), and /pull/N for /issues/N. The number is decimal
// without a leading zero. Anything else (another path, credentials in the
// URL, a non-http scheme) is Invalid.
func ParseIssueURL(raw string) (IssueRef, error) {
	bad := func() (IssueRef, error) {
		return IssueRef{}, baton.Errorf(baton.Invalid, "bad issue URL %q: want https://github.com/OWNER/NAME/issues/N", baton.Truncate(scrubCredentials(raw), 200, "…"))
	}
	r, rest, ok := parseWebURL(strings.TrimSpace(raw))
	if !ok || len(rest) != 2 || rest[0] != "issues" && rest[0] != "pull" {
		return bad()
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil || n <= 0 || strconv.Itoa(n) != rest[1] {
		return bad()
	}
	r.Owner, r.Name = strings.ToLower(r.Owner), strings.ToLower(r.Name)
	return IssueRef{Repo: r, Number: n}, nil
}
