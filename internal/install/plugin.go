package install

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/baton-agent/baton/integrations"
	"github.com/baton-agent/baton/internal/harness"
)

// The plugin tree: one directory, PluginDir, that Claude Code, Codex and
// Factory Droid install as a plugin from this repository's marketplace
// files, and pi installs as a package. It is generated from the same
// templates as `baton install` (integrations/), so the two never drift;
// TestPluginTreeIsGenerated fails when the committed tree differs, and
// `go test ./internal/install -update` rewrites it.
const (
	// PluginDir is where the plugin lives in the repository.
	PluginDir = "plugins/baton"
	// PluginName is the plugin's name in every harness (and its
	// marketplace's): installed as baton@baton.
	PluginName = "baton"
	// PiPackageName is the npm name of the pi package the repository
	// root and PluginDir declare.
	PiPackageName = "baton-pi"
	// ShimFile is the plugin's fail-open hook shim (harness.Shim).
	ShimFile = "hooks/baton-hook.sh"
	// pluginVersion is the plugins' version: Codex caches a plugin per
	// version, so a release that changes the tree raises it.
	pluginVersion = "0.2.2"
)

const (
	pluginDescription = "Handoff packets, pickup, loops that end on a promise, and a shared context store for coding agents: hooks, skills and the baton MCP server."
	repoURL           = "https://github.com/baton-agent/baton"
)

// pluginSkillDialect is how the plugin's skills are written: one file for
// every harness, so no !`…` injection (only Claude Code runs it) and no
// $ARGUMENTS (Claude Code appends the arguments; the others leave them in
// the user's message); the allowed-tools grant is Claude Code's and
// ignored elsewhere.
var pluginSkillDialect = dialect{Skill: true, AllowedTools: true, Args: skillArgs}

// pluginHookCommand is the command a plugin hook file runs for the
// harnesses that read it (sharers, the first its owner): the plugin's
// shim, found through the plugin-root variable the owner expands, which
// runs baton from PATH. A file shared with another harness (Droid reads
// Claude Code's) also passes that harness's own root variable, which only
// it expands: the shim takes a non-empty third argument to mean Droid
// (TestPluginHookFiles keeps the table to that).
func pluginHookCommand(sharers []*harness.Harness, ev harness.Event) string {
	owner := sharers[0]
	c := `sh "${` + owner.Plugin.RootVar + `}/` + ShimFile + `" ` + string(ev) + " " + string(owner.Name)
	for _, h := range sharers[1:] {
		c += ` "${` + h.Plugin.RootVar + `}"`
	}
	return c
}

// PluginFiles returns the plugin tree and the repository root's
// marketplace and package files, by path relative to the repository root.
func PluginFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	put := func(p string, v any) {
		b, _ := json.MarshalIndent(v, "", "  ")
		files[p] = append(b, '\n')
	}
	in := func(p string) string { return path.Join(PluginDir, p) }
	author := map[string]string{"name": "The baton developers", "url": repoURL}

	// Marketplaces at the repository root.
	claudeMarket := map[string]any{
		"name":        PluginName,
		"owner":       author,
		"description": "baton's plugin for Claude Code and Factory Droid",
		"plugins": []any{map[string]any{
			"name": PluginName, "source": "./" + PluginDir, "description": pluginDescription,
			"version": pluginVersion, "author": author, "license": "MIT", "homepage": repoURL, "category": "productivity",
		}},
	}
	put(".claude-plugin/marketplace.json", claudeMarket)
	put(".factory-plugin/marketplace.json", claudeMarket)
	put(".agents/plugins/marketplace.json", map[string]any{
		"name":      PluginName,
		"interface": map[string]any{"displayName": "baton"},
		"plugins": []any{map[string]any{
			"name":     PluginName,
			"source":   map[string]any{"source": "local", "path": "./" + PluginDir},
			"policy":   map[string]any{"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
			"category": "Productivity",
		}},
	})
	// pi installs a git repository (or a local directory) as a package
	// from its root's package.json.
	put("package.json", piPackage(PluginDir+"/"))

	// The plugin's manifests.
	manifest := map[string]any{
		"name": PluginName, "version": pluginVersion, "description": pluginDescription, "author": author,
		"homepage": repoURL, "repository": repoURL, "license": "MIT",
		"keywords": []string{"handoff", "context", "loops", "mcp", "hooks"},
	}
	put(in(".claude-plugin/plugin.json"), manifest)
	put(in(".factory-plugin/plugin.json"), manifest)
	codex := map[string]any{}
	for k, v := range manifest {
		codex[k] = v
	}
	codex["skills"] = "./skills/"
	codex["hooks"] = "./hooks/codex.json"
	codex["mcpServers"] = "./.mcp.json"
	codex["interface"] = map[string]any{
		"displayName": "baton", "shortDescription": "Handoffs, pickup and loops for coding agents",
		"longDescription": pluginDescription, "developerName": "The baton developers", "category": "Productivity",
		"websiteURL": repoURL,
	}
	put(in(".codex-plugin/plugin.json"), codex)
	put(in("package.json"), piPackage(""))

	// Hooks: each hooks file a harness reads (Claude Code's
	// hooks/hooks.json, read by Droid too; Codex's own, named by its
	// manifest), and the shim they run.
	for _, hf := range pluginHookFiles() {
		files[in(hf.path)] = pluginHooks(hf.sharers)
	}
	files[in(ShimFile)] = []byte("#!/bin/sh\n" +
		"# baton's plugin hook shim (generated from harness.Shim; edit that, then\n" +
		"# run go test ./internal/install -update). Usage: baton-hook.sh EVENT\n" +
		"# HARNESS [DROID_PLUGIN_ROOT]. It runs baton-hook from PATH when\n" +
		"# present, else `baton hook`, else exits 0 and says once, at session\n" +
		"# start, how to install baton: a plugin never breaks a session.\n" +
		harness.Shim + "\n")

	// MCP: .mcp.json for Claude Code and Codex, mcp.json for Droid.
	put(in(".mcp.json"), map[string]any{"mcpServers": map[string]any{MCPServerName: map[string]any{"command": "baton", "args": []string{"mcp"}}}})
	put(in("mcp.json"), map[string]any{"mcpServers": map[string]any{MCPServerName: map[string]any{"type": "stdio", "command": "baton", "args": []string{"mcp"}}}})

	// Skills, from integrations/commands like the installed ones.
	for _, name := range SkillNames() {
		b, err := render(name, "baton", "generated from integrations/commands/"+name+".md; edit that template, not this file", pluginSkillDialect)
		if err != nil {
			return nil, err
		}
		files[in("skills/"+name+"/SKILL.md")] = b
	}

	// pi's extension, as `baton install pi` writes it into a project.
	files[in("extensions/baton.ts")] = []byte(integrations.PiExtension)
	files[in("README.md")] = []byte(pluginReadme)
	return files, nil
}

// pluginHooks renders a plugin hooks file for the harnesses that read it:
// baton's four hooks in Claude Code's shape, matching every sharer's write
// tools, with a description (Codex accepts no other key).
func pluginHooks(sharers []*harness.Harness) []byte {
	var products, writeTools []string
	for _, h := range sharers {
		products = append(products, h.Product)
		for _, tool := range h.WriteTools {
			if !slices.Contains(writeTools, tool) {
				writeTools = append(writeTools, tool)
			}
		}
	}
	description := "baton's hooks for " + strings.Join(products, " and ")
	if len(sharers) > 1 {
		description += " (each reads this file)"
	}
	description += ": session context, recorded files, pre-compaction packets and loops. They run baton from PATH and do nothing without it."
	type handler struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type group struct {
		Matcher string    `json:"matcher,omitempty"`
		Hooks   []handler `json:"hooks"`
	}
	events := map[string][]group{}
	for _, e := range []hookEvent{
		{Event: "SessionStart", Matcher: "startup|resume|clear|compact", Baton: harness.SessionStart},
		{Event: "PostToolUse", Matcher: strings.Join(writeTools, "|"), Baton: harness.PostToolUse},
		{Event: "PreCompact", Baton: harness.PreCompact},
		{Event: "Stop", Baton: harness.Stop},
	} {
		events[e.Event] = []group{{Matcher: e.Matcher, Hooks: []handler{{Type: "command", Command: pluginHookCommand(sharers, e.Baton), Timeout: timeoutFor(e.Baton)}}}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		Description string             `json:"description"`
		Hooks       map[string][]group `json:"hooks"`
	}{description, events})
	return b.Bytes()
}

// pluginHookFile is one hooks file of the plugin and the harnesses that
// read it, the owner (first in the table) first.
type pluginHookFile struct {
	path    string
	sharers []*harness.Harness
}

// pluginHookFiles lists the plugin's hooks files, from the harness table.
func pluginHookFiles() []pluginHookFile {
	var out []pluginHookFile
	for _, h := range harness.Harnesses {
		if h.Plugin.Hooks == "" {
			continue
		}
		i := slices.IndexFunc(out, func(f pluginHookFile) bool { return f.path == h.Plugin.Hooks })
		if i < 0 {
			out = append(out, pluginHookFile{path: h.Plugin.Hooks})
			i = len(out) - 1
		}
		out[i].sharers = append(out[i].sharers, h)
	}
	return out
}

// piPackage is a pi package manifest for the plugin at dir (relative to
// the package.json, "" for its own directory).
func piPackage(dir string) map[string]any {
	return map[string]any{
		"name":        PiPackageName,
		"version":     pluginVersion,
		"private":     true,
		"description": "baton for pi: " + pluginDescription,
		"keywords":    []string{"pi-package"},
		"license":     "MIT",
		"repository":  repoURL,
		"pi": map[string]any{
			"extensions": []string{"./" + dir + "extensions/baton.ts"},
			"skills":     []string{"./" + dir + "skills"},
		},
	}
}

const pluginReadme = `# baton plugin

baton gives coding agents a project-local context store: handoff packets
that carry a task from one session to the next, loops that repeat a prompt
until the agent states a promise, and a log of the files that matter.

This plugin brings baton's hooks (session context, recorded files,
pre-compaction packets, loops), its skills (/handoff, /pickup,
/baton-loop, ... and the baton workflow skill) and its MCP server to
Claude Code, Codex, Factory Droid and pi. It runs the baton binary from
PATH and does nothing until baton is installed:
https://github.com/baton-agent/baton#install

This directory is generated (go test ./internal/install -update) from
integrations/ and internal/harness; see docs/hooks.md.
`

// PluginPaths lists PluginFiles' paths, sorted.
func PluginPaths(files map[string][]byte) []string {
	var out []string
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
