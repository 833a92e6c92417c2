package github

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// Environment variables that say where baton may send a token.
const (
	// hostsVar lists the GitHub Enterprise hosts baton may authenticate
	// to besides github.com: host names (host:port when not 443),
	// separated by commas or spaces.
	hostsVar = "BATON_GITHUB_HOSTS"
	// gHHostVar is gh's default host; baton allows it too, so a machine
	// set up for gh against one Enterprise host works as it is.
	gHHostVar = "GH_HOST"
	// APIURLVar is the github.com API URL the operator chose (GitHub
	// Actions sets it); the github.com token may go there.
	APIURLVar = "GITHUB_API_URL"
	// AllowHTTPLoopbackVar, when true ("1"), lets an API URL be plain
	// http on a loopback address, standing in for a host's API: for
	// tests and development against a local server only.
	AllowHTTPLoopbackVar = "BATON_GITHUB_ALLOW_HTTP_LOOPBACK"
)

// Hosts are the GitHub hosts baton may send a token to: github.com always,
// and the GitHub Enterprise hosts the operator names in GH_HOST or
// BATON_GITHUB_HOSTS. A host anyone can type into an issue URL or a
// webhook is not enough: the zero value allows github.com only.
type Hosts struct {
	enterprise []string // normalized host[:port]
}

// HostsFromEnv reads GH_HOST and BATON_GITHUB_HOSTS. Invalid when either
// names something that is not a host.
func HostsFromEnv(getenv func(string) string) (Hosts, error) {
	if getenv == nil {
		return Hosts{}, nil
	}
	var h Hosts
	for _, v := range []string{gHHostVar, hostsVar} {
		list, err := parseHosts(getenv(v))
		if err != nil {
			return Hosts{}, baton.WrapError(baton.Invalid, err, "%s", v)
		}
		for _, e := range list {
			if e != DefaultHost && !slices.Contains(h.enterprise, e) {
				h.enterprise = append(h.enterprise, e)
			}
		}
	}
	return h, nil
}

// parseHosts reads a list of host names separated by commas or
// whitespace, as BATON_GITHUB_HOSTS holds them: "ghe.example.com,
// git.corp.example:8443". Names are lower-cased, a default port (:443)
// dropped, and www.github.com read as github.com. Invalid for anything
// that is not a host name (a URL, a path, credentials).
func parseHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		h := strings.TrimSuffix(normalizeHost(f), ":443")
		if !validHost(h) {
			return nil, baton.Errorf(baton.Invalid, "%q is not a host name: want names like ghe.example.com or ghe.example.com:8443, separated by commas", baton.Truncate(f, 100, "…"))
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, nil
}

// Enterprise is the GitHub Enterprise hosts h allows besides github.com
// (host, or host:port when not 443).
func (h Hosts) Enterprise() []string { return slices.Clone(h.enterprise) }

// Allows reports whether baton may send host's token to host's API.
func (h Hosts) Allows(host string) bool {
	host = normalizeHost(host)
	return host == "" || host == DefaultHost || slices.Contains(h.enterprise, host)
}

// Check returns nil when h allows host, else an Invalid error that names
// the host and what to configure.
func (h Hosts) Check(host string) error {
	if h.Allows(host) {
		return nil
	}
	return baton.Errorf(baton.Invalid,
		"%s is not a GitHub host baton is configured for: baton sends a token only to github.com and the GitHub Enterprise hosts it is told about: add %s to %s (or set %s=%s) and give it a token of its own (GH_ENTERPRISE_TOKEN, or `gh auth login --hostname %s`)",
		host, host, hostsVar, gHHostVar, host, host)
}

// resolveAPIURL picks the REST API base URL for repo's host and checks
// that the host's token may be sent there. The URL is apiURL when set
// (--api-url, a source's API URL), else for github.com GITHUB_API_URL or
// https://api.github.com/, else GITHUB_API_URL when it is on the
// Enterprise host itself (GitHub Actions on GHES), else
// https://HOST/api/v3/.
//
// A token goes only to its own host's API: github.com's to
// api.github.com or the origin of GITHUB_API_URL (the operator's own
// choice), an Enterprise host's to that host or api.HOST (GHE.com). Only
// https is used, except that a plain-http loopback address may stand in
// for any host's API when BATON_GITHUB_ALLOW_HTTP_LOOPBACK is set, for
// tests and development. Anything else is Invalid and names the rule.
func resolveAPIURL(apiURL string, getenv func(string) string, host string) (string, error) {
	host = normalizeHost(hostOrDefault(host))
	env := ""
	if getenv != nil {
		env = strings.TrimSpace(getenv(APIURLVar))
	}
	raw := strings.TrimSpace(apiURL)
	if raw == "" {
		raw = aPIURL(host)
		if env != "" {
			if host == DefaultHost {
				raw = env
			} else if u, err := url.Parse(env); err == nil && ownAPIHost(host, webHostPort(u)) {
				raw = env
			}
		}
	}
	u, err := parseBaseURL(raw)
	if err != nil {
		return "", err
	}
	loopbackOK := isLoopback(u.Hostname()) && allowHTTPLoopback(getenv)
	if u.Scheme != "https" && !loopbackOK {
		return "", baton.Errorf(baton.Invalid,
			"GitHub API URL %s is plain http: baton sends a token only over https (plain http only to a loopback address, with %s=1, for tests)", u, AllowHTTPLoopbackVar)
	}
	if loopbackOK || ownAPIHost(host, webHostPort(u)) {
		return u.String(), nil
	}
	if host == DefaultHost {
		if e, err := url.Parse(env); env != "" && err == nil && strings.EqualFold(e.Scheme, u.Scheme) && webHostPort(e) == webHostPort(u) {
			return u.String(), nil
		}
		return "", baton.Errorf(baton.Invalid,
			"GitHub API URL %s is not github.com's: baton sends the github.com token only to https://api.github.com/ or to %s in its own environment", u, APIURLVar)
	}
	return "", baton.Errorf(baton.Invalid,
		"GitHub API URL %s is not on %s: baton sends %s's token only to https://%s/api/v3/ or https://api.%s/", u, host, host, host, host)
}

// ownAPIHost reports whether apiHost (host[:port]) serves host's API:
// api.github.com for github.com, the host itself for GitHub Enterprise
// Server (/api/v3/), and api.HOST for GHE.com.
func ownAPIHost(host, apiHost string) bool {
	if host == DefaultHost {
		return apiHost == "api.github.com"
	}
	return apiHost == host || apiHost == "api."+host
}

func isLoopback(hostname string) bool {
	if strings.EqualFold(hostname, "localhost") {
		return true
	}
	ip := net.ParseIP(hostname)
	return ip != nil && ip.IsLoopback()
}

func allowHTTPLoopback(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	on, err := strconv.ParseBool(strings.TrimSpace(getenv(AllowHTTPLoopbackVar)))
	return err == nil && on
}
