package netpolicy

import (
	"cmp"
	"strings"

	"github.com/baton-agent/baton"
)

// Registries are the package registries a box reaches unless told not
// to: what `npm install`, `go mod download`, `pip install`, `cargo
// fetch` and their kin fetch from by default.
func Registries() []string {
	return []string{
		// npm, yarn, pnpm, bun
		"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com",
		// Go: the module proxy, the checksum database
		"proxy.golang.org", "sum.golang.org",
		// Python
		"pypi.org", "files.pythonhosted.org",
		// Rust
		"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org",
		// Ruby, Java, .NET, PHP, Deno, Elixir
		"rubygems.org", "index.rubygems.org",
		"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org",
		"api.nuget.org", "repo.packagist.org", "jsr.io", "deno.land", "repo.hex.pm",
	}
}

// GitHub is github.com's hosts, for a box to read public repositories,
// releases and raw files: the site, its API, and where archives, release
// assets and raw files are served from.
func GitHub() []string {
	return []string{"github.com", "api.github.com", "codeload.github.com", "*.githubusercontent.com"}
}

// Variables that set a box's network for every baton command.
const (
	// AllowVar adds entries to the allowlist, separated by commas or
	// white space.
	AllowVar = "BATON_EGRESS_ALLOW"
	// DefaultsVar, when "off", leaves out the default registries and
	// github.com: the box then reaches its agent's model API, the forge
	// hosts configured for baton, and what is added.
	DefaultsVar = "BATON_EGRESS_DEFAULTS"
)

// Settings are a server's network settings, from its flags and
// environment.
type Settings struct {
	// Allow are entries from --egress-allow.
	Allow []string
	// Defaults is "on" or "off" from --egress-defaults; "" reads
	// DefaultsVar, else on.
	Defaults string
	// Forge are the forge's hosts besides github.com's: the Enterprise
	// hosts baton is configured for and the API URL it uses.
	Forge []string
}

// Configure is the allowlist a server's boxes start from: the default
// registries and github.com (unless turned off), the forge's hosts, the
// flags' entries and AllowVar's. An agent's model API and a repository's
// own entries are added per run. Errors are Invalid and name the entry.
func Configure(getenv func(string) string, s Settings) (Allowlist, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var entries []string
	switch d := strings.ToLower(strings.TrimSpace(cmp.Or(s.Defaults, getenv(DefaultsVar), "on"))); d {
	case "on", "true", "1", "yes":
		entries = append(append(entries, Registries()...), GitHub()...)
	case "off", "false", "0", "no":
	default:
		return Allowlist{}, baton.Errorf(baton.Invalid, "--egress-defaults (or %s) takes on or off, got %q", DefaultsVar, baton.Truncate(d, 40, "…"))
	}
	entries = append(append(append(entries, s.Forge...), s.Allow...), getenv(AllowVar))
	return Parse(entries...)
}
