package install

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/baton-agent/baton/integrations"
	"github.com/baton-agent/baton/internal/harness"
)

// skillArgs stands for a skill's arguments where the harness does not
// substitute them: Claude Code appends them after the text, and the
// others leave them in the user's message.
const skillArgs = "(the arguments given with this skill)"

// dialect is how a harness's command files are written.
type dialect struct {
	// Inject: the harness runs !`cmd` lines before the model reads the
	// file (Claude Code); elsewhere the model is asked to run the command.
	Inject bool
	// AllowedTools adds Claude's allowed-tools grant for the baton binary,
	// without which an injected command aborts the invocation.
	AllowedTools bool
	// ArgumentHint: the harness reads argument-hint from frontmatter.
	ArgumentHint bool
	// Args is the placeholder for the command's arguments.
	Args string
	// Skill writes a skill (<dir>/<name>/SKILL.md with a name) instead of
	// a command file.
	Skill bool
}

// SkillNames lists baton's skills, one per template in
// integrations/commands. None collides with a harness built-in: Claude
// Code reserves /loop, /review (and its alias of /code-review), /doctor,
// /debug, /batch, /verify, /goal.
func SkillNames() []string {
	entries, _ := fs.ReadDir(integrations.Commands, "commands")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".md"))
	}
	sort.Strings(names)
	return names
}

// CommandNames lists baton's slash commands: the skills meant to be
// invoked by name (a template that defines "kind" as skill, such as the
// baton workflow skill, is for the model to load, not a command).
func CommandNames() []string {
	var names []string
	for _, n := range SkillNames() {
		if kind, _ := templateKind(n); kind != "skill" {
			names = append(names, n)
		}
	}
	return names
}

// templateKind is what a template defines as "kind" ("" for none).
func templateKind(name string) (string, error) {
	tmpl, err := parseTemplate(name)
	if err != nil || tmpl.Lookup("kind") == nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "kind", nil); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

func parseTemplate(name string) (*template.Template, error) {
	src, err := fs.ReadFile(integrations.Commands, path.Join("commands", name+".md"))
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New(name).Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("parse command template %s: %w", name, err)
	}
	return tmpl, nil
}

// renderCommand renders one command file (or skill) for a harness.
func renderCommand(name string, t Target, d dialect) ([]byte, error) {
	exe := t.commandExe()
	mark := fmt.Sprintf("%s: written by `baton install %s`; `baton uninstall %s` removes it. Edits are overwritten.", managedMark, t.Harness, t.Harness)
	return render(name, exe, mark, d)
}

// render renders template name for a dialect, calling baton as exe, with
// mark as the frontmatter's first comment.
func render(name, exe, mark string, d dialect) ([]byte, error) {
	tmpl, err := parseTemplate(name)
	if err != nil {
		return nil, err
	}
	data := struct {
		Exe, Args string
		Inject    bool
	}{exe, d.Args, d.Inject}
	exec := func(which string) (string, error) {
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, which, data); err != nil {
			return "", fmt.Errorf("render command %s: %w", name, err)
		}
		return strings.TrimSpace(b.String()), nil
	}
	body, err := exec(name)
	if err != nil {
		return nil, err
	}
	desc, err := exec("description")
	if err != nil {
		return nil, err
	}
	hint, err := exec("argument-hint")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	fmt.Fprintf(&b, "# %s\n", mark)
	if d.Skill {
		fmt.Fprintf(&b, "name: %s\n", name)
	}
	fmt.Fprintf(&b, "description: %s\n", yamlString(desc))
	if d.ArgumentHint && hint != "" {
		fmt.Fprintf(&b, "argument-hint: %s\n", yamlString(hint))
	}
	if d.AllowedTools {
		fmt.Fprintf(&b, "allowed-tools: %s\n", yamlString("Bash("+exe+" *)"))
	}
	b.WriteString("---\n\n")
	b.WriteString(body)
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// commandExe is how command files call baton. Project command files are
// usually committed, so they name baton as found on PATH and work on a
// teammate's machine; user-scope ones, which stay on this machine, name
// this binary.
func (t Target) commandExe() string {
	if t.Scope == ScopeProject {
		return "baton"
	}
	return harness.ShellQuote(t.Exe)
}

// yamlString quotes s as a YAML double-quoted scalar.
func yamlString(s string) string {
	var b bytes.Buffer
	writeString(&b, s)
	return b.String()
}

// planCommands plans every command file (or, with d.Skill, every skill)
// in dir.
func planCommands(dir string, t Target, d dialect, install bool) ([]Change, error) {
	var out []Change
	names := CommandNames()
	if d.Skill {
		names = SkillNames()
	}
	for _, name := range names {
		content, err := renderCommand(name, t, d)
		if err != nil {
			return nil, err
		}
		path, kind := filepath.Join(dir, name+".md"), "command"
		if d.Skill {
			path, kind = filepath.Join(dir, name, "SKILL.md"), "skill"
		}
		c, err := planManagedFile(path, kind, content, install)
		if err != nil {
			return nil, err
		}
		if !install && c.Action == Unchanged && c.Before == nil {
			continue // nothing there, nothing to say
		}
		out = append(out, c)
	}
	return out, nil
}

// CommandFile returns where t's harness keeps command name and baton's
// content for it.
func CommandFile(t Target, name string) (path string, content []byte, err error) {
	sp, err := spec(t.Harness)
	if err != nil {
		return "", nil, err
	}
	if sp.commandsDir == nil {
		return "", nil, fmt.Errorf("%s has no command files", t.Harness)
	}
	content, err = renderCommand(name, t, sp.dialect)
	return filepath.Join(sp.commandsDir(t), name+".md"), content, err
}
