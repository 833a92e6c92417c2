package install

import (
	"path/filepath"

	"github.com/baton-agent/baton/internal/harness"
)

// Factory Droid: hooks in .factory/hooks.json or ~/.factory/hooks.json,
// a map keyed directly by event name (Droid ignores a {"hooks": …}
// wrapper there, which an earlier baton wrote: install unwraps it);
// Droid's matchers apply to tool events only. The project's hooks call
// baton from PATH (the file is meant to be committed). Skills in
// .factory/skills/, and the same as commands in .factory/commands/ (or
// under ~/.factory/) for Droid versions without skills; both know only
// $ARGUMENTS and no !`…` injection, so they ask the model to run baton.
var droidSpec = harnessSpec{
	hooksFile:   func(t Target) string { return filepath.Join(t.base(), ".factory", "hooks.json") },
	flatHooks:   true,
	sharedHooks: true,
	hookEvents:  claudeStyleHooks(harness.Droid, ""),
	commandsDir: func(t Target) string { return filepath.Join(t.base(), ".factory", "commands") },
	skillsDir:   func(t Target) string { return filepath.Join(t.base(), ".factory", "skills") },
	// MCP: .factory/mcp.json or ~/.factory/mcp.json, with "type": "stdio".
	mcp:          &mcpSpec{file: func(t Target) string { return filepath.Join(t.base(), ".factory", "mcp.json") }, stdioType: true},
	dialect:      dialect{ArgumentHint: true, Args: "$ARGUMENTS"},
	skillDialect: dialect{Args: skillArgs},
	notes: func(t Target, changed bool) []string {
		return []string{"Droid reloads hooks.json on change; `/hooks` in Droid lists them."}
	},
}
