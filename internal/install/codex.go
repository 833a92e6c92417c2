package install

import (
	"path/filepath"

	"github.com/baton-agent/baton/internal/codexconf"
	"github.com/baton-agent/baton/internal/hook"
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
	hookEvents: claudeStyleHooks(hook.Codex, "startup|resume|clear|compact"),
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
