package install

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Status is what is installed for one harness at one scope.
type Status struct {
	Harness   baton.Harness   `json:"harness"`
	Scope     Scope           `json:"scope"`
	File      string          `json:"file"` // the hooks file, or the pi extension
	Installed bool            `json:"installed"`
	Hooks     []InstalledHook `json:"hooks"`
	Commands  []string        `json:"commands"` // baton-managed command files present
	Skills    []string        `json:"skills"`   // baton-managed skills present
	Binaries  []string        `json:"binaries"` // baton binaries the hooks call
	// MCPFile is where the harness registers MCP servers, and MCPCommand
	// the command of baton's server there ("" when it is not registered).
	MCPFile    string `json:"mcp_file,omitempty"`
	MCPCommand string `json:"mcp_command,omitempty"`
	Error      string `json:"error,omitempty"`
}

var piBinRE = regexp.MustCompile(`const BATON_BIN = process\.env\.BATON_BIN \?\? ("(?:[^"\\]|\\.)*");`)

// Inspect reports what baton installed for t's harness and scope.
func Inspect(t Target) Status {
	st := Status{Harness: t.Harness, Scope: t.Scope, Hooks: []InstalledHook{}, Commands: []string{}, Skills: []string{}, Binaries: []string{}}
	sp, err := spec(t.Harness)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	addBin := func(b string) {
		// A hook that calls baton from PATH runs the baton found there.
		if !filepath.IsAbs(b) {
			if p, err := exec.LookPath(b); err == nil {
				b = p
			}
		}
		for _, x := range st.Binaries {
			if x == b {
				return
			}
		}
		st.Binaries = append(st.Binaries, b)
	}
	switch {
	case sp.hooksFile != nil:
		st.File = sp.hooksFile(t)
		hooks, err := FindBatonHooks(st.File, sp.flatHooks)
		if err != nil {
			st.Error = err.Error()
		}
		if hooks != nil {
			st.Hooks = hooks
		}
		for _, h := range hooks {
			addBin(h.exe)
		}
		st.Installed = len(hooks) > 0
	case sp.extension != nil:
		st.File = sp.extension(t)
		b, err := safefile.ReadFileFollow(st.File, maxSettingsBytes)
		if err == nil && bytes.Contains(b, []byte(managedMark)) {
			st.Installed = true
			if m := piBinRE.FindSubmatch(b); m != nil {
				if s, err := unquoteJSON(m[1]); err == nil {
					addBin(s)
				}
			}
		}
	}
	if file, cmd, err := InstalledMCP(t); err != nil && st.Error == "" {
		st.Error = err.Error()
	} else {
		st.MCPFile, st.MCPCommand = file, cmd
	}
	if sp.commandsDir != nil {
		dir := sp.commandsDir(t)
		for _, name := range CommandNames() {
			p := filepath.Join(dir, name+".md")
			if b, err := safefile.ReadFileFollow(p, maxSettingsBytes); err == nil && bytes.Contains(b, []byte(managedMark)) {
				st.Commands = append(st.Commands, p)
			}
		}
	}
	if sp.skillsDir != nil {
		dir := sp.skillsDir(t)
		for _, name := range SkillNames() {
			p := filepath.Join(dir, name, "SKILL.md")
			if b, err := safefile.ReadFileFollow(p, maxSettingsBytes); err == nil && bytes.Contains(b, []byte(managedMark)) {
				st.Skills = append(st.Skills, p)
			}
		}
	}
	return st
}

func unquoteJSON(b []byte) (string, error) {
	o, err := parseObject(append(append([]byte(`{"s":`), b...), '}'))
	if err != nil {
		return "", err
	}
	s, _ := o.vals["s"].(string)
	return s, nil
}

// Untrusted says, one problem a line, what of the harness's own trust
// keeps baton's installation s (Inspect(t)) from running: Codex runs no
// hook of an untrusted project and skips hooks not yet trusted in its
// review; pi loads no project resource of an untrusted project. None when
// nothing does, or the harness has no such trust.
// PluginUntrusted says, one condition a line, what of the harness's own
// trust may keep baton's enabled plugin from running, with the step that
// fixes it; none when nothing can.
func PluginUntrusted(t Target) []string {
	sp, err := spec(t.Harness)
	if err != nil || sp.pluginTrust == nil {
		return nil
	}
	return sp.pluginTrust(t)
}

func Untrusted(t Target, s Status) []string {
	sp, err := spec(t.Harness)
	if err != nil || sp.untrusted == nil || !s.Installed {
		return nil
	}
	return sp.untrusted(t, s)
}
