package install

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/baton-agent/baton/integrations"
)

// pi: no hook configuration; baton installs its TypeScript extension
// (integrations/pi/index.ts, with this binary's path) as
// .pi/extensions/baton/index.ts or ~/.pi/agent/extensions/baton/index.ts,
// and prompt templates in .pi/prompts/ or ~/.pi/agent/prompts/.
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
	dialect: dialect{Args: "$ARGUMENTS"},
	notes: func(t Target, changed bool) []string {
		return []string{"pi loads extensions at startup: restart pi (or /reload) to load baton's."}
	},
}

// piBinaryLine is the line of the extension that names the baton binary.
const piBinaryLine = `const BATON_BIN = process.env.BATON_BIN ?? "baton";`

// renderPiExtension is the extension with this binary's absolute path.
func renderPiExtension(t Target) []byte {
	return []byte(strings.Replace(integrations.PiExtension, piBinaryLine,
		"const BATON_BIN = process.env.BATON_BIN ?? "+strconv.Quote(t.Exe)+";", 1))
}
