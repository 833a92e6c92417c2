package install

import (
	"path/filepath"

	"github.com/baton-agent/baton/internal/harness"
)

// Claude Code: hooks in .claude/settings.local.json (project: the hook
// commands hold this machine's absolute binary path, so they stay out of
// the shared .claude/settings.json) or ~/.claude/settings.json (user);
// skills in .claude/skills/ or ~/.claude/skills/ (Claude Code merged
// custom commands into skills; a skill beats a command of its name, so
// the command files an earlier baton wrote are removed), with !`…`
// injection and an allowed-tools grant for the baton binary.
var claudeSpec = harnessSpec{
	hooksFile: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.Home, ".claude", "settings.json")
		}
		return filepath.Join(t.Root, ".claude", "settings.local.json")
	},
	hookEvents:        claudeStyleHooks(harness.Claude, "startup|resume|clear|compact"),
	skillsDir:         func(t Target) string { return filepath.Join(t.base(), ".claude", "skills") },
	legacyCommandsDir: func(t Target) string { return filepath.Join(t.base(), ".claude", "commands") },
	// MCP: the project's .mcp.json (usually committed, so it calls baton
	// from PATH) or the user's ~/.claude.json.
	mcp: &mcpSpec{file: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.Home, ".claude.json")
		}
		return filepath.Join(t.Root, ".mcp.json")
	}},
	skillDialect: dialect{Inject: true, AllowedTools: true, ArgumentHint: true, Args: "$ARGUMENTS"},
	notes: func(t Target, changed bool) []string {
		n := []string{"Claude Code picks up hook changes live; `/hooks` lists them. Skills: /handoff, /pickup, /baton-loop, /baton-cancel, /baton-status, /review-pr, /fix-issue, /implement-feature, and baton (the workflow, loaded by the model)."}
		if t.Scope == ScopeProject {
			n = append(n, "Interactive sessions run project hooks only after you accept the folder's trust dialog.")
		}
		if !t.NoMCP {
			n = append(n, "MCP: baton's tools reach the model as mcp__baton__<tool> (pickup, handoff, ...); interactive sessions ask once to approve a project's .mcp.json servers, `claude -p` connects without asking.")
		}
		return n
	},
}
