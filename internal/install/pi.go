package install

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/baton-agent/baton/integrations"
)

// pi: no hook configuration; baton installs its TypeScript extension
// (integrations/pi/index.ts; at user scope with this binary's path, in a
// project calling baton from PATH) as .pi/extensions/baton/index.ts or
// ~/.pi/agent/extensions/baton/index.ts, prompt templates (pi's slash
// commands) in .pi/prompts/, skills in .pi/skills/, and the MCP server in
// .pi/mcp.json (pi 0.99 and later), or the same under ~/.pi/agent/.
var piSpec = harnessSpec{
	extension: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.piAgentDir(), "extensions", "baton", "index.ts")
		}
		return filepath.Join(t.Root, ".pi", "extensions", "baton", "index.ts")
	},
	commandsDir: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.piAgentDir(), "prompts")
		}
		return filepath.Join(t.Root, ".pi", "prompts")
	},
	skillsDir: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.piAgentDir(), "skills")
		}
		return filepath.Join(t.Root, ".pi", "skills")
	},
	mcp: &mcpSpec{file: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.piAgentDir(), "mcp.json")
		}
		return filepath.Join(t.Root, ".pi", "mcp.json")
	}},
	dialect:      dialect{Args: "$ARGUMENTS"},
	skillDialect: dialect{Args: skillArgs},
	notes: func(t Target, changed bool) []string {
		n := []string{"pi loads extensions at startup: restart pi (or /reload) to load baton's."}
		if t.Scope == ScopeProject {
			n = append(n, "pi loads a project's .pi/ extension, skills, prompts and mcp.json only once you trust the project: start pi here and choose Trust (or /trust); pi -p, --mode json and --mode rpc need -a until then. `baton doctor` checks it.")
		}
		return n
	},
}

// piBinaryLine is the line of the extension that names the baton binary.
const piBinaryLine = `const BATON_BIN = process.env.BATON_BIN ?? "baton";`

// renderPiExtension is the extension, calling this binary by its
// absolute path at user scope and baton from PATH in a project (where
// the file may be committed).
func renderPiExtension(t Target) []byte {
	if t.Scope == ScopeProject {
		return []byte(integrations.PiExtension)
	}
	return []byte(strings.Replace(integrations.PiExtension, piBinaryLine,
		"const BATON_BIN = process.env.BATON_BIN ?? "+strconv.Quote(t.Exe)+";", 1))
}
