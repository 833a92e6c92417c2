package install

import (
	"bytes"
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/integrations"
	"github.com/baton-agent/baton/internal/hook"
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
	// ShimFile is the plugin's fail-open hook shim (hook.Shim).
	ShimFile = "hooks/baton-hook.sh"
	// pluginVersion is the plugins' version: Codex caches a plugin per
	// version, so a release that changes the tree raises it.
	pluginVersion = "0.2.0"
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

// pluginHookCommand is the command a plugin hook file runs: the plugin's
// shim, found through the plugin-root variable the harness expands
// (Codex: ${PLUGIN_ROOT}; Claude Code and Droid: ${CLAUDE_PLUGIN_ROOT}),
// which runs baton from PATH. Droid reads Claude Code's hooks/hooks.json
// (it ignores a manifest's hooks path) and is the only one to expand
// ${DROID_PLUGIN_ROOT}, so that argument tells the shim it runs in Droid.
func pluginHookCommand(h baton.Harness, ev hook.Event) string {
	switch h {
	case baton.HarnessCodex:
		return `sh "${PLUGIN_ROOT}/` + ShimFile + `" ` + string(ev) + " codex"
	default:
		return `sh "${CLAUDE_PLUGIN_ROOT}/` + ShimFile + `" ` + string(ev) + ` claude "${DROID_PLUGIN_ROOT}"`
	}
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

	// Hooks: Claude Code's hooks/hooks.json (read by Droid too), Codex's
	// own file (named by its manifest), and the shim they run.
	files[in("hooks/hooks.json")] = pluginHooks(baton.HarnessClaude, "baton's hooks for Claude Code and Factory Droid (Droid reads this file too): session context, recorded files, pre-compaction packets and loops. They run baton from PATH and do nothing without it.",
		append(append([]string(nil), hook.Claude.WriteTools...), extraTools(hook.Droid.WriteTools, hook.Claude.WriteTools)...))
	files[in("hooks/codex.json")] = pluginHooks(baton.HarnessCodex, "baton's hooks for Codex: session context, recorded files, pre-compaction packets and loops. They run baton from PATH and do nothing without it.",
		hook.Codex.WriteTools)
	files[in(ShimFile)] = []byte("#!/bin/sh\n" +
		"# baton's plugin hook shim (generated from hook.Shim; edit that, then\n" +
		"# run go test ./internal/install -update). Usage: baton-hook.sh EVENT\n" +
		"# HARNESS [DROID_PLUGIN_ROOT]. It runs baton-hook from PATH when\n" +
		"# present, else `baton hook`, else exits 0 and says once, at session\n" +
		"# start, how to install baton: a plugin never breaks a session.\n" +
		hook.Shim + "\n")

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

// extraTools is the tools of a that b lacks, in a's order.
func extraTools(a, b []string) []string {
	var out []string
	for _, t := range a {
		found := false
		for _, u := range b {
			found = found || t == u
		}
		if !found {
			out = append(out, t)
		}
	}
	return out
}

// pluginHooks renders a plugin hooks file: baton's four hooks in Claude
// Code's shape, with a description (Codex accepts no other key).
func pluginHooks(h baton.Harness, description string, writeTools []string) []byte {
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
		{Event: "SessionStart", Matcher: "startup|resume|clear|compact", Baton: hook.SessionStart},
		{Event: "PostToolUse", Matcher: strings.Join(writeTools, "|"), Baton: hook.PostToolUse},
		{Event: "PreCompact", Baton: hook.PreCompact},
		{Event: "Stop", Baton: hook.Stop},
	} {
		events[e.Event] = []group{{Matcher: e.Matcher, Hooks: []handler{{Type: "command", Command: pluginHookCommand(h, e.Baton), Timeout: timeoutFor(e.Baton)}}}}
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
integrations/ and internal/hook; see docs/hooks.md.
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
