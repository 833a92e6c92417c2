package install

import (
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
)

// Codex CLI: hooks in .codex/hooks.json (project; loaded only in trusted
// projects) or ~/.codex/hooks.json (user); custom prompts only exist in
// ~/.codex/prompts/, invoked as /prompts:<name>. Codex runs a new or
// changed hook only after the user trusts it in /hooks, so install never
// rewrites a hooks file whose baton hooks are already right.
var codexSpec = harnessSpec{
	hooksFile: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.codexHome(), "hooks.json")
		}
		return filepath.Join(t.Root, ".codex", "hooks.json")
	},
	hookEvents: []hookEvent{
		{Event: "SessionStart", Matcher: "startup|resume|clear|compact", Baton: "session-start"},
		{Event: "PostToolUse", Matcher: strings.Join(baton.WriteTools[baton.HarnessCodex], "|"), Baton: "post-tool-use"},
		{Event: "PreCompact", Baton: "pre-compact"},
		{Event: "Stop", Baton: "stop"},
	},
	commandsDir: func(t Target) string { return filepath.Join(t.codexHome(), "prompts") },
	dialect:     dialect{ArgumentHint: true, Args: "$ARGUMENTS"},
	notes: func(t Target, changed bool) []string {
		var n []string
		if changed {
			n = append(n, "Codex runs new or changed hooks only after you trust them: open /hooks in Codex and trust baton's four hooks.")
		}
		if t.Scope == ScopeProject {
			n = append(n, "Project hooks load only in a trusted project ([projects.\""+t.Root+"\"] trust_level = \"trusted\" in "+filepath.Join(t.codexHome(), "config.toml")+", or `codex exec --trust` once).")
		}
		n = append(n, "Prompts live in "+filepath.Join(t.codexHome(), "prompts")+" for every scope: /prompts:handoff, /prompts:pickup, /prompts:baton-loop, ...")
		return n
	},
}
