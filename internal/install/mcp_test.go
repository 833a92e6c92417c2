package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton"
)

// Install registers baton's MCP server in each harness's own file,
// merged with what the user has there; a second install changes
// nothing; uninstall takes out exactly baton's entry.
func TestMCPRegistration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h     baton.Harness
		scope Scope
		file  func(Target) string
		user  string // the user's own file before install
		want  string // a fragment of the installed file
	}{
		{baton.HarnessClaude, ScopeProject, func(tg Target) string { return filepath.Join(tg.Root, ".mcp.json") },
			"{\n  \"mcpServers\": {\n    \"db\": {\n      \"command\": \"pg-mcp\"\n    }\n  }\n}\n",
			"\"baton\": {\n      \"command\": \"baton\",\n      \"args\": [\n        \"mcp\"\n      ]\n    }"},
		{baton.HarnessClaude, ScopeUser, func(tg Target) string { return filepath.Join(tg.Home, ".claude.json") },
			"{\n  \"numStartups\": 4,\n  \"projects\": {}\n}\n", "\"command\": \"" + exe + "\""},
		{baton.HarnessDroid, ScopeProject, func(tg Target) string { return filepath.Join(tg.Root, ".factory", "mcp.json") },
			"", "\"type\": \"stdio\",\n      \"command\": \"baton\""},
		{baton.HarnessCodex, ScopeProject, func(tg Target) string { return filepath.Join(tg.Home, ".codex", "config.toml") },
			"# my settings\nmodel = \"o3\"\n\n[mcp_servers.db]\ncommand = \"pg-mcp\" # keep this comment\n\n[projects.\"/x\"]\ntrust_level = \"trusted\"\n",
			"[mcp_servers.baton]\ncommand = \"" + exe + "\"\nargs = [\"mcp\"]\n"},
	}
	for _, c := range cases {
		t.Run(string(c.h)+"-"+string(c.scope), func(t *testing.T) {
			tg := target(t, c.h, c.scope)
			path := c.file(tg)
			if MCPFile(tg) != path {
				t.Fatalf("MCPFile = %s, want %s", MCPFile(tg), path)
			}
			if c.user != "" {
				write(t, path, []byte(c.user))
			}
			mustApply(t, Install, tg)
			got := readString(t, path)
			if !strings.Contains(got, c.want) {
				t.Fatalf("after install %s =\n%s\nwant it to hold\n%s", path, got, c.want)
			}
			if c.user != "" && c.h == baton.HarnessCodex && !strings.HasPrefix(got, c.user) {
				t.Errorf("the user's config.toml was not kept byte for byte:\n%s", got)
			}
			if _, cmd, err := InstalledMCP(tg); err != nil || cmd == "" {
				t.Errorf("InstalledMCP = %q, %v", cmd, err)
			}
			p, err := Install(tg)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range p.Changes {
				if ch.Kind == "mcp" && ch.Action != Unchanged {
					t.Errorf("a second install would %s %s", ch.Action, ch.Path)
				}
			}
			mustApply(t, Uninstall, tg)
			after, err := os.ReadFile(path)
			switch {
			case c.user == "" && err == nil:
				t.Errorf("uninstall left %s holding only what baton wrote:\n%s", path, after)
			case c.user != "" && c.h == baton.HarnessCodex && string(after) != c.user:
				t.Errorf("uninstall did not restore config.toml:\n%q\nwant\n%q", after, c.user)
			case c.user != "" && c.h != baton.HarnessCodex && strings.Contains(string(after), "baton"):
				t.Errorf("uninstall left baton in %s:\n%s", path, after)
			}
			if _, cmd, _ := InstalledMCP(tg); cmd != "" {
				t.Errorf("InstalledMCP after uninstall = %q", cmd)
			}
		})
	}
}

func TestMCPNoMCPAndForeignEntries(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessClaude, ScopeProject)
	tg.NoMCP = true
	mustApply(t, Install, tg)
	if _, err := os.Stat(filepath.Join(tg.Root, ".mcp.json")); err == nil {
		t.Error("--no-mcp wrote .mcp.json")
	}

	// A server named baton that is not baton's is never touched.
	tg = target(t, baton.HarnessClaude, ScopeProject)
	foreign := "{\"mcpServers\":{\"baton\":{\"command\":\"baton-relay\",\"args\":[\"serve\"]}}}"
	write(t, filepath.Join(tg.Root, ".mcp.json"), []byte(foreign))
	p, err := Install(tg)
	if err != nil {
		t.Fatal(err)
	}
	applyPlan(t, p)
	if got := readString(t, filepath.Join(tg.Root, ".mcp.json")); got != foreign {
		t.Errorf("a foreign baton entry was changed: %s", got)
	}
	mustApply(t, Uninstall, tg)
	if got := readString(t, filepath.Join(tg.Root, ".mcp.json")); got != foreign {
		t.Errorf("uninstall removed a foreign baton entry: %s", got)
	}

	tg = target(t, baton.HarnessCodex, ScopeUser)
	cfg := filepath.Join(tg.Home, ".codex", "config.toml")
	write(t, cfg, []byte("[mcp_servers.baton]\ncommand = \"other\"\nargs = [\"x\"]\n"))
	mustApply(t, Install, tg)
	if got := readString(t, cfg); !strings.Contains(got, `command = "other"`) {
		t.Errorf("a foreign codex entry was changed:\n%s", got)
	}

	// A config.toml baton cannot parse is refused before anything is written.
	write(t, cfg, []byte("model = \n"))
	if _, err := Install(tg); err == nil || !strings.Contains(err.Error(), "not TOML baton can read") {
		t.Errorf("install over a broken config.toml = %v", err)
	}
}

// FuzzWithoutTOMLTable: removing baton's table keeps every other line in
// order, and what remains defines no mcp_servers.baton.
func FuzzWithoutTOMLTable(f *testing.F) {
	f.Add("a = 1\n[mcp_servers.baton]\ncommand = \"b\"\n[mcp_servers.baton.env]\nX = \"1\"\n[other]\nk = 2\n")
	f.Add("[mcp_servers.\"baton\"]\nargs=[\"mcp\"]\n")
	f.Add("[mcp_servers.batonx]\nk=1\n")
	f.Fuzz(func(t *testing.T, text string) {
		var before map[string]any
		if _, err := toml.Decode(text, &before); err != nil {
			return
		}
		out, found := withoutTOMLTable(text)
		if !found {
			if out != text {
				t.Fatalf("nothing found but the text changed: %q -> %q", text, out)
			}
			return
		}
		var after struct {
			MCPServers map[string]any `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(out, &after); err == nil {
			if _, ok := after.MCPServers["baton"]; ok {
				t.Fatalf("baton's table survived: %q -> %q", text, out)
			}
		}
		// Every kept line was in the input, in order.
		rest := text
		for _, l := range strings.SplitAfter(out, "\n") {
			if l == "" {
				continue
			}
			i := strings.Index(rest, l)
			if i < 0 {
				t.Fatalf("line %q is not from the input %q", l, text)
			}
			rest = rest[i+len(l):]
		}
	})
}

func readString(t *testing.T, path string) string { t.Helper(); return string(read(t, path)) }
