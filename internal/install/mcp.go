package install

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton"
)

// MCPServerName is the name baton's MCP server is registered under; its
// tools reach the model as mcp__baton__<tool>.
const MCPServerName = "baton"

// mcpSpec says where a harness registers MCP servers.
type mcpSpec struct {
	file func(t Target) string
	toml bool // Codex's config.toml; else a JSON file with "mcpServers"
	// stdioType adds "type": "stdio" to the entry (Droid's format).
	stdioType bool
}

// mcpFor returns where t's harness registers MCP servers; false for a
// harness without MCP.
func mcpFor(t Target) (*mcpSpec, bool) {
	sp, err := spec(t.Harness)
	if err != nil || sp.mcp == nil {
		return nil, false
	}
	return sp.mcp, true
}

// MCPFile returns the file where t's harness registers baton's MCP
// server, or "" for a harness without MCP.
func MCPFile(t Target) string {
	if sp, ok := mcpFor(t); ok {
		return sp.file(t)
	}
	return ""
}

// mcpCommand is the command an MCP entry runs: baton from PATH in a
// project file meant to be committed, else this binary.
func (t Target) mcpCommand(sp *mcpSpec) string {
	if t.Scope == ScopeProject && !sp.toml {
		return "baton"
	}
	return t.Exe
}

// planMCP registers (or, uninstalling, removes) baton's MCP server. An
// entry named baton that baton did not write (its arguments are not
// "mcp") is left alone.
func planMCP(t Target, install bool) (Change, bool, error) {
	sp, ok := mcpFor(t)
	if !ok {
		return Change{}, false, nil
	}
	if sp.toml {
		c, err := planMCPTOML(sp.file(t), t.mcpCommand(sp), install)
		return c, true, err
	}
	c, err := planMCPJSON(sp.file(t), t.mcpCommand(sp), sp.stdioType, install)
	return c, true, err
}

func planMCPJSON(path, command string, stdioType, install bool) (Change, error) {
	before, err := readFile(path)
	if err != nil {
		return Change{}, err
	}
	c := Change{Path: path, Kind: "mcp", Before: before, After: before, Action: Unchanged}
	root, err := parseObject(before)
	if err != nil {
		return c, baton.Errorf(baton.Conflict, "%s is not JSON baton can edit (%v): the MCP server was not registered; fix it by hand, then run again", path, err)
	}
	servers, _ := root.vals["mcpServers"].(*object)
	var existing *object
	if servers != nil {
		existing, _ = servers.vals[MCPServerName].(*object)
	}
	if existing != nil && !isBatonMCPEntry(existing) {
		if install {
			c.Action, c.Note = Skip, "an MCP server named baton that baton did not write is there; left alone"
		}
		return c, nil
	}
	if !install {
		if existing == nil {
			return c, nil
		}
		servers.del(MCPServerName)
		if len(servers.keys) == 0 {
			root.del("mcpServers")
		}
		if len(root.keys) == 0 {
			c.Action, c.After, c.Note = Remove, nil, "only baton's MCP server was in it"
			return c, nil
		}
		c.Action, c.After = Update, encode(root)
		return c, nil
	}
	entry := newObject()
	if stdioType {
		entry.set("type", "stdio")
	}
	entry.set("command", command)
	entry.set("args", []any{"mcp"})
	if existing != nil && bytes.Equal(encode(existing), encode(entry)) {
		return c, nil
	}
	if servers == nil {
		servers = newObject()
		root.set("mcpServers", servers)
	}
	servers.set(MCPServerName, entry)
	c.After = encode(root)
	if before == nil {
		c.Action = Create
	} else {
		c.Action = Update
	}
	return c, nil
}

// isBatonMCPEntry reports whether an mcpServers entry is the one baton
// writes: it runs `<baton> mcp`.
func isBatonMCPEntry(e *object) bool {
	args, _ := e.vals["args"].([]any)
	return len(args) >= 1 && args[0] == "mcp"
}

// tomlTableRE matches the header of baton's table, quoted or not, and of
// its subtables.
var tomlTableRE = regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*("baton"|'baton'|baton)\s*(\]|\.)`)

// planMCPTOML edits Codex's config.toml as text, so the user's comments
// and layout survive: baton's [mcp_servers.baton] table (and its
// subtables) is replaced or removed, everything else is kept byte for
// byte. The result must still parse.
func planMCPTOML(path, command string, install bool) (Change, error) {
	before, err := readFile(path)
	if err != nil {
		return Change{}, err
	}
	c := Change{Path: path, Kind: "mcp", Before: before, After: before, Action: Unchanged}
	var cfg struct {
		MCPServers map[string]struct {
			Args []string `toml:"args"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(before), &cfg); err != nil {
		return c, baton.Errorf(baton.Conflict, "%s is not TOML baton can read (%v): the MCP server was not registered; fix it by hand, then run again", path, err)
	}
	entry, exists := cfg.MCPServers[MCPServerName]
	if exists && (len(entry.Args) == 0 || entry.Args[0] != "mcp") {
		if install {
			c.Action, c.Note = Skip, "an MCP server named baton that baton did not write is there; left alone"
		}
		return c, nil
	}
	kept, found := withoutTOMLTable(string(before))
	if exists && !found {
		if install {
			c.Action, c.Note = Skip, "baton's MCP server is defined inline; edit it by hand"
		}
		return c, nil
	}
	after := kept
	if install {
		if after != "" && !strings.HasSuffix(after, "\n") {
			after += "\n"
		}
		if after != "" && !strings.HasSuffix(after, "\n\n") {
			after += "\n"
		}
		var q bytes.Buffer
		writeString(&q, command)
		after += fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [\"mcp\"]\n", MCPServerName, q.String())
	}
	if after == string(before) {
		return c, nil
	}
	if _, err := toml.Decode(after, new(map[string]any)); err != nil {
		return c, baton.Errorf(baton.Conflict, "%s: registering the MCP server would break the file (%v); add [mcp_servers.baton] by hand", path, err)
	}
	switch {
	case !install && strings.TrimSpace(after) == "":
		c.Action, c.After, c.Note = Remove, nil, "only baton's MCP server was in it"
	case before == nil:
		c.Action, c.After = Create, []byte(after)
	default:
		c.Action, c.After = Update, []byte(after)
	}
	return c, nil
}

// withoutTOMLTable returns text without baton's table and its subtables
// (each from its header to the next header), and whether there was one.
// Blank lines left where it was are trimmed.
func withoutTOMLTable(text string) (string, bool) {
	if text == "" {
		return "", false
	}
	lines := strings.SplitAfter(text, "\n")
	var out []string
	found, skipping := false, false
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "[") {
			skipping = tomlTableRE.MatchString(l)
			found = found || skipping
		}
		if !skipping {
			out = append(out, l)
		}
	}
	if !found {
		return text, false
	}
	s := strings.Join(out, "")
	for strings.HasSuffix(s, "\n\n") {
		s = strings.TrimSuffix(s, "\n")
	}
	return s, true
}

// InstalledMCP says whether baton's MCP server is registered for t and
// with which command ("" when it is not).
func InstalledMCP(t Target) (file, command string, err error) {
	sp, ok := mcpFor(t)
	if !ok {
		return "", "", nil
	}
	file = sp.file(t)
	b, err := readFile(file)
	if err != nil || b == nil {
		return file, "", err
	}
	if sp.toml {
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `toml:"command"`
				Args    []string `toml:"args"`
			} `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(string(b), &cfg); err != nil {
			return file, "", fmt.Errorf("%s: %w", file, err)
		}
		if e, ok := cfg.MCPServers[MCPServerName]; ok && len(e.Args) > 0 && e.Args[0] == "mcp" {
			return file, e.Command, nil
		}
		return file, "", nil
	}
	root, err := parseObject(b)
	if err != nil {
		return file, "", fmt.Errorf("%s: %w", file, err)
	}
	servers, _ := root.vals["mcpServers"].(*object)
	if servers == nil {
		return file, "", nil
	}
	e, _ := servers.vals[MCPServerName].(*object)
	if e == nil || !isBatonMCPEntry(e) {
		return file, "", nil
	}
	cmd, _ := e.vals["command"].(string)
	return file, cmd, nil
}
