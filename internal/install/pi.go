package install

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/baton-agent/baton/integrations"
	"github.com/baton-agent/baton/internal/piconf"
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
	untrusted:    piUntrusted,
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

// piUntrusted says what keeps pi from loading baton's project
// extension: since pi 0.79 a project's .pi/ resources load only once the
// user trusts the project, and print, JSON and RPC modes skip them
// without -a.
func piUntrusted(t Target, _ Status) []string {
	if t.Scope != ScopeProject {
		return nil // the user's own directory needs no trust
	}
	tr, err := piconf.ReadTrust(t.piAgentDir(), t.Root)
	if err != nil {
		return []string{fmt.Sprintf("pi (project): cannot read %v", err)}
	}
	switch tr.Decision {
	case piconf.Trusted:
		return nil
	case piconf.Declined:
		return []string{fmt.Sprintf("pi (project): %s is declined in pi's trust (%s), so pi loads none of its .pi/ extensions, skills, prompts or mcp.json: run /trust in pi here and trust it, or pass -a to pi", t.Root, tr.File)}
	}
	return []string{fmt.Sprintf("pi (project): %s is not trusted in pi yet (%s), so pi -p, --mode json and --mode rpc skip baton's extension, skills and MCP server there, and the TUI asks first: start pi here once and choose Trust (or /trust), or pass -a to pi", t.Root, tr.File)}
}
