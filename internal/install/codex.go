package install

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/baton-agent/baton/internal/codexconf"
	"github.com/baton-agent/baton/internal/harness"
)

// Codex CLI: hooks in .codex/hooks.json (project; loaded only in trusted
// projects) or ~/.codex/hooks.json (user); custom prompts only exist in
// ~/.codex/prompts/, invoked as /prompts:<name>. Codex runs a new or
// changed hook only after the user trusts it in /hooks, so install never
// rewrites a hooks file whose baton hooks are already right.
var codexSpec = harnessSpec{
	hooksFile: func(t Target) string {
		if t.Scope == ScopeUser {
			return codexconf.HooksFile(t.codexHome(), "")
		}
		return codexconf.HooksFile("", t.Root)
	},
	hookEvents: claudeStyleHooks(harness.Codex, "startup|resume|clear|compact"),
	// .codex/hooks.json is usually committed: its hooks call baton from
	// PATH, and a teammate's Codex trusts the same hook hashes.
	sharedHooks: true,
	commandsDir: func(t Target) string { return filepath.Join(t.codexHome(), "prompts") },
	// [mcp_servers] in $CODEX_HOME/config.toml, which Codex reads for
	// every project (the server finds the project from its working
	// directory).
	mcp: &mcpSpec{file: func(t Target) string { return filepath.Join(t.codexHome(), "config.toml") }, toml: true},
	// Current Codex has no /prompts: any more; it lists skills to the
	// model and injects one with $<name>.
	skillsDir: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.codexHome(), "skills")
		}
		return filepath.Join(t.Root, ".agents", "skills")
	},
	dialect:      dialect{ArgumentHint: true, Args: "$ARGUMENTS"},
	skillDialect: dialect{Args: skillArgs},
	untrusted:    codexUntrusted,
	pluginTrust:  codexPluginUnreviewed,
	notes: func(t Target, changed bool) []string {
		var n []string
		if changed {
			n = append(n, "Codex runs new or changed hooks only after you trust them: open /hooks in Codex and trust baton's four hooks.")
		}
		if t.Scope == ScopeProject {
			n = append(n, "Project hooks load only in a trusted project ([projects.\""+t.Root+"\"] trust_level = \"trusted\" in "+filepath.Join(t.codexHome(), "config.toml")+", or `codex exec --trust` once).")
		}
		n = append(n, "Skills: $handoff, $pickup, $baton-loop, ... (current Codex); the same as prompts in "+filepath.Join(t.codexHome(), "prompts")+" for Codex versions that still read /prompts:<name>.")
		return n
	},
}

// codexUntrusted says what keeps installed Codex hooks from running:
// an untrusted project (no project hook runs) or hooks not yet trusted in
// Codex's "Hooks need review" dialog (codex exec skips them silently).
// codexPluginUnreviewed is what Codex's trust asks of baton's plugin: its
// hooks pass Codex's /hooks review like any others, and codex exec skips
// them silently until then. Codex keeps a plugin's review in a form baton
// does not read, so this is said whenever the plugin is enabled.
func codexPluginUnreviewed(Target) []string {
	return []string{"codex plugin: Codex runs a plugin's hooks only once they are trusted in its /hooks review, and `codex exec` skips them without a word until then (baton cannot read that review for plugin hooks): start `codex` in this project, open /hooks and trust baton's hooks (`codex exec --dangerously-bypass-hook-trust` skips the review for one run)"}
}

func codexUntrusted(t Target, s Status) []string {
	root := t.Root
	if t.Scope == ScopeUser {
		root = "" // the user's hooks need no project trust
	}
	ct, err := codexconf.ReadTrust(t.codexHome(), root)
	if err != nil {
		return []string{fmt.Sprintf("codex (%s): cannot read %v", t.Scope, err)}
	}
	var out []string
	if !ct.ProjectTrusted {
		out = append(out, fmt.Sprintf("codex (project): %s is not a trusted project in %s, so Codex runs none of its hooks: run `codex exec --trust` here once, or add [projects.%q] trust_level = \"trusted\"", t.Root, ct.Config, t.Root))
	}
	var untrusted []string
	for _, hk := range s.Hooks {
		if !slices.Contains(ct.TrustedEvents, hk.Event) {
			untrusted = append(untrusted, hk.Event)
		}
	}
	if len(untrusted) > 0 {
		out = append(out, fmt.Sprintf("codex (%s): baton's %s hook(s) are not trusted yet, and `codex exec` skips untrusted hooks without a word: open /hooks in Codex and trust them (or pass --dangerously-bypass-hook-trust to codex exec)", t.Scope, strings.Join(untrusted, ", ")))
	}
	return out
}
