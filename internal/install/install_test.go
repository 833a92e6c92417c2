package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"reflect"
	"slices"

	"github.com/baton-agent/baton/internal/golden"
	"github.com/baton-agent/baton/internal/harness"

	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

const exe = "/usr/local/bin/baton"

var now = time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)

func target(t *testing.T, h baton.Harness, scope Scope) Target {
	t.Helper()
	return Target{Harness: h, Scope: scope, Root: t.TempDir(), Home: t.TempDir(), Exe: exe}
}

func mustApply(t *testing.T, plan func(Target) (*Plan, error), tg Target) []string {
	t.Helper()
	p, err := plan(tg)
	if err != nil {
		t.Fatal(err)
	}
	return applyPlan(t, p)
}

func applyPlan(t *testing.T, p *Plan) []string {
	t.Helper()
	b, err := Apply(p, now)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Install into existing settings files with other hooks, reinstall,
// uninstall: goldens for the merged file, nothing changes the second time,
// and uninstall gives back the user's hooks (minus a stale baton hook from
// an old binary path).
func TestInstallRoundTripOnExistingFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		harness baton.Harness
		scope   Scope
		before  string
		file    func(Target) string
	}{
		{baton.HarnessClaude, ScopeProject, "claude_settings.before.json", func(t Target) string { return filepath.Join(t.Root, ".claude/settings.local.json") }},
		{baton.HarnessCodex, ScopeUser, "codex_hooks.before.json", func(t Target) string { return filepath.Join(t.Home, ".codex/hooks.json") }},
		{baton.HarnessDroid, ScopeProject, "droid_hooks.before.json", func(t Target) string { return filepath.Join(t.Root, ".factory/hooks.json") }},
	}
	for _, tt := range tests {
		t.Run(string(tt.harness), func(t *testing.T) {
			tg := target(t, tt.harness, tt.scope)
			path := tt.file(tg)
			original := read(t, filepath.Join("testdata", tt.before))
			write(t, path, original)

			backups := mustApply(t, Install, tg)
			installed := read(t, path)
			golden.Check(t, string(tt.harness)+"_installed.golden.json", installed)
			if len(backups) != 1 || backups[0] != path+".baton-backup-20261122T093400Z" || string(read(t, backups[0])) != string(original) {
				t.Errorf("backups = %v, want one copy of the original", backups)
			}
			hooks, err := FindBatonHooks(path, tt.harness == baton.HarnessDroid)
			if err != nil || len(hooks) != 4 {
				t.Fatalf("FindBatonHooks = %v, %v; want 4", hooks, err)
			}
			sp, _ := spec(tt.harness)
			for _, h := range hooks {
				ev, _ := harness.CommandEvent(h.Command, nil)
				if want := harness.Command(tg.hookExe(sp), ev, tt.harness); h.Command != want {
					t.Errorf("installed hook %+v, want command %q", h, want)
				}
			}

			// Idempotent: a second install plans no change and writes nothing.
			p, err := Install(tg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Changed() {
				t.Errorf("second install plans changes:\n%s", Describe(p, true))
			}
			for _, n := range p.Notes {
				if strings.Contains(n, "/hooks in Codex") {
					t.Errorf("an unchanged Codex install asks to re-trust: %q", n)
				}
			}

			mustApply(t, Uninstall, tg)
			after := read(t, path)
			want := strings.Replace(string(original), `,
          {
            "type": "command",
            "command": "/old/place/bin/baton hook stop --harness claude",
            "timeout": 30
          }`, "", 1)
			if diff := cmp.Diff(want, string(after)); diff != "" {
				t.Errorf("uninstall did not give back the user's file (-want +got):\n%s", diff)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".md") {
					t.Errorf("uninstall left command %s", e.Name())
				}
			}
		})
	}
}

// Every harness of the table installs and uninstalls cleanly.
func TestInstallFreshAndUninstallRemovesFile(t *testing.T) {
	t.Parallel()
	for _, hh := range harness.Harnesses {
		h := hh.Name
		tg := target(t, h, ScopeProject)
		p, err := Install(tg)
		if err != nil {
			t.Fatal(err)
		}
		applyPlan(t, p)
		var paths []string
		for _, c := range p.Changes {
			if c.Action != Create {
				t.Errorf("%s fresh install: %s %s", h, c.Action, c.Path)
			}
			paths = append(paths, c.Path)
		}
		mustApply(t, Uninstall, tg)
		for _, path := range paths {
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s uninstall left %s", h, path)
			}
		}
	}
}

func TestCommandFiles(t *testing.T) {
	t.Parallel()
	for _, hh := range harness.Harnesses {
		h := hh.Name
		tg := target(t, h, ScopeUser)
		p, err := Install(tg)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, c := range p.Changes {
			if c.Kind != "command" && c.Kind != "skill" {
				continue
			}
			name := filepath.Base(c.Path)
			if c.Kind == "skill" {
				name = filepath.Base(filepath.Dir(c.Path)) + ".md"
			}
			if name == "handoff.md" || name == "pickup.md" || name == "review-pr.md" || c.Kind == "skill" && name == "baton.md" {
				got.WriteString("==> " + c.Kind + " " + name + "\n")
				got.Write(c.After)
			}
			for _, reserved := range []string{"loop.md", "review.md", "doctor.md", "goal.md", "code-review.md", "debug.md"} {
				if name == reserved {
					t.Errorf("%s installs the reserved command %s", h, name)
				}
			}
		}
		golden.Check(t, "commands_"+string(h)+".golden.md", []byte(got.String()))
	}
	// Codex prompts are user-level whatever the scope.
	tg := target(t, baton.HarnessCodex, ScopeProject)
	p, _ := Install(tg)
	for _, c := range p.Changes {
		if c.Kind == "command" && !strings.HasPrefix(c.Path, filepath.Join(tg.Home, ".codex", "prompts")) {
			t.Errorf("codex prompt at %s", c.Path)
		}
	}
}

// A command file the user wrote is never overwritten or removed.
func TestForeignCommandFileIsLeftAlone(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessDroid, ScopeUser)
	mine := filepath.Join(tg.Home, ".factory/commands/handoff.md")
	write(t, mine, []byte("my own handoff\n"))
	p, err := Install(tg)
	if err != nil {
		t.Fatal(err)
	}
	applyPlan(t, p)
	mustApply(t, Uninstall, tg)
	if string(read(t, mine)) != "my own handoff\n" {
		t.Error("a foreign command file changed")
	}
	skipped := false
	for _, c := range p.Changes {
		if c.Path == mine && c.Action == Skip {
			skipped = true
		}
	}
	if !skipped {
		t.Error("the foreign file was not reported as skipped")
	}
}

func TestDryRunDiffAndInvalidJSON(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessCodex, ScopeProject)
	path := filepath.Join(tg.Root, ".codex/hooks.json")
	write(t, path, read(t, "testdata/codex_hooks.before.json"))
	p, err := Install(tg)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "codex_dry_run.golden.txt", []byte(strings.ReplaceAll(strings.ReplaceAll(Describe(p, true), tg.Root, "$ROOT"), tg.Home, "$HOME")))
	if string(read(t, path)) != string(read(t, "testdata/codex_hooks.before.json")) {
		t.Error("planning wrote the file")
	}
	write(t, path, []byte("{ not json"))
	if p, err = Install(tg); err == nil || !strings.Contains(err.Error(), "no hooks were installed") || !strings.Contains(err.Error(), path) {
		t.Errorf("invalid JSON: %v, %+v", err, p)
	}
}

// FuzzParseObject checks the settings parser against encoding/json: it
// accepts exactly the JSON objects encoding/json accepts (within the depth
// cap), and what it writes back means the same.
func FuzzParseObject(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":null}],"c":"\u003c"}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"x": 1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseObject(data)
		var want map[string]any
		werr := decodeNumbers(data, &want)
		if len(bytes.TrimSpace(data)) == 0 {
			return // empty input is an empty object to the installer
		}
		if err != nil {
			if werr == nil && !strings.Contains(err.Error(), "nested deeper") {
				t.Fatalf("parseObject refused %q, which encoding/json reads: %v", data, err)
			}
			return
		}
		if werr != nil {
			t.Fatalf("parseObject accepted %q, which encoding/json refuses: %v", data, werr)
		}
		enc := encode(o)
		var got map[string]any
		if err := decodeNumbers(enc, &got); err != nil {
			t.Fatalf("the encoding of %q does not read back: %v\n%s", data, err, enc)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q was written back as %s, which means something else", data, enc)
		}
	})
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

// FuzzInstallUninstall: on any settings object, installing twice equals
// installing once, and uninstalling gives back what the user had.
func FuzzInstallUninstall(f *testing.F) {
	f.Add([]byte(`{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"~/x.sh"}]}]}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"hooks":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseObject(data)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return
		}
		if hooks, ok := o.vals["hooks"].(*object); ok && removeBatonHooks(hooks) {
			return // the user's file already holds baton hooks: not a round trip
		}
		tg := target(t, baton.HarnessClaude, ScopeProject)
		path := claudeSpec.hooksFile(tg)
		write(t, path, data)
		mustApply(t, Install, tg)
		once := read(t, path)
		if p, err := Install(tg); err != nil || p.Changed() {
			t.Fatalf("a second install would change %s: %v %+v", once, err, p)
		}
		mustApply(t, Uninstall, tg)
		var want, got map[string]any
		_ = decodeNumbers(data, &want)
		after, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			after = []byte("{}")
		}
		if err := decodeNumbers(after, &got); err != nil {
			t.Fatalf("uninstall left %q: %v", after, err)
		}
		if h, ok := want["hooks"].(map[string]any); ok && len(h) == 0 && got["hooks"] == nil {
			delete(want, "hooks") // an empty hooks object baton emptied is dropped
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("install and uninstall turned %s into %s", data, after)
		}
	})
}

// A Droid hooks.json an earlier baton wrote wrapped in {"hooks": …}, which
// Droid ignores, is rewritten in the shape Droid reads: the user's hooks
// kept, baton's once, nothing left in a wrapper; doctor's view agrees.
func TestDroidHooksUnwrapped(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessDroid, ScopeProject)
	path := droidSpec.hooksFile(tg)
	old := `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "~/log.sh"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "/old/bin/baton hook stop --harness droid"}]}]}}`
	write(t, path, []byte(old))
	if hooks, _ := FindBatonHooks(path, true); len(hooks) != 0 {
		t.Errorf("hooks in the wrapper Droid ignores were reported as installed: %v", hooks)
	}
	mustApply(t, Install, tg)
	root, err := parseObject(read(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := root.vals["hooks"]; ok {
		t.Errorf("the wrapper is still there:\n%s", read(t, path))
	}
	for _, ev := range []string{"SessionStart", "PostToolUse", "PreCompact", "Stop", "SessionEnd"} {
		if _, ok := root.vals[ev].([]any); !ok {
			t.Errorf("no top-level %s:\n%s", ev, read(t, path))
		}
	}
	hooks, err := FindBatonHooks(path, true)
	if err != nil || len(hooks) != 4 {
		t.Errorf("baton hooks after install = %v, %v; want 4 (the old one replaced)", hooks, err)
	}
	if !strings.Contains(string(read(t, path)), "~/log.sh") {
		t.Errorf("the user's hook was lost:\n%s", read(t, path))
	}
	mustApply(t, Uninstall, tg)
	if hooks, _ := FindBatonHooks(path, true); len(hooks) != 0 || !strings.Contains(string(read(t, path)), "~/log.sh") {
		t.Errorf("after uninstall: %v\n%s", hooks, read(t, path))
	}
}

// Project files are meant to be committed (hooks, skills, commands, the
// MCP entry, the pi extension): none names this machine's binary, so
// they work on a teammate's machine; only Claude Code's
// settings.local.json, which stays on this machine, does. Every injected
// line exits 0 (a failing !`…` line would cancel the whole skill in
// Claude Code).
func TestProjectFilesArePortable(t *testing.T) {
	t.Parallel()
	for _, hh := range harness.Harnesses {
		tg := target(t, hh.Name, ScopeProject)
		p, err := Install(tg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Changes {
			if !strings.HasPrefix(c.Path, tg.Root) || strings.HasSuffix(c.Path, "settings.local.json") {
				continue
			}
			if strings.Contains(string(c.After), exe) {
				t.Errorf("%s %s names this machine's binary %s:\n%s", hh.Name, c.Path, exe, c.After)
			}
			for _, line := range strings.Split(string(c.After), "\n") {
				if strings.HasPrefix(line, "!`") && !strings.HasSuffix(line, " 2>&1 || true`") {
					t.Errorf("%s %s: %q can exit non-zero", hh.Name, c.Path, line)
				}
			}
		}
	}
}

// The PostToolUse matcher installed for each harness names exactly the
// tools its hook records, both from the harness table's WriteTools.
func TestWriteToolsOneTable(t *testing.T) {
	t.Parallel()
	for _, h := range harness.Harnesses {
		sp, err := spec(h.Name)
		if err != nil {
			t.Fatal(err)
		}
		if h.Extension {
			continue // the extension filters its own tools
		}
		var matcher string
		for _, e := range sp.hookEvents {
			if e.Baton == harness.PostToolUse {
				matcher = e.Matcher
			}
		}
		tools := strings.Split(matcher, "|")
		if !slices.Equal(tools, h.WriteTools) {
			t.Errorf("%s: installed matcher %q, write tools %v", h.Name, matcher, h.WriteTools)
		}
		for _, tool := range tools {
			if !h.IsWriteTool(tool) {
				t.Errorf("%s: the matcher lets %s through but the hook ignores it", h.Name, tool)
			}
		}
	}
}

// Claude Code merged custom commands into skills: install writes skills
// and removes the command files an earlier baton wrote (a skill beats a
// command of its name), leaving the user's own.
func TestClaudeSkillsReplaceCommands(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessClaude, ScopeProject)
	old := filepath.Join(tg.Root, ".claude/commands/handoff.md")
	mine := filepath.Join(tg.Root, ".claude/commands/deploy.md")
	write(t, old, []byte("---\n# baton-managed: written by `baton install claude`\ndescription: old\n---\nold\n"))
	write(t, mine, []byte("deploy it\n"))
	mustApply(t, Install, tg)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old baton command %s is still there", old)
	}
	if string(read(t, mine)) != "deploy it\n" {
		t.Error("the user's own command changed")
	}
	for _, name := range SkillNames() {
		b := read(t, filepath.Join(tg.Root, ".claude/skills", name, "SKILL.md"))
		if !bytes.Contains(b, []byte("name: "+name+"\n")) {
			t.Errorf("skill %s has no name:\n%s", name, b)
		}
	}
	mustApply(t, Uninstall, tg)
	if _, err := os.Stat(filepath.Join(tg.Root, ".claude/skills")); !os.IsNotExist(err) {
		t.Error("uninstall left .claude/skills")
	}
}

// While baton's plugin (pi: its package) is enabled for a harness, in
// the user's or the project's settings, install writes nothing and says
// why: the plugin's hooks and installed ones would both run.
func TestInstallLeavesEnabledPluginAlone(t *testing.T) {
	t.Parallel()
	pkg := t.TempDir()
	write(t, filepath.Join(pkg, "package.json"), []byte(`{"name":"`+PiPackageName+`"}`))
	moved := t.TempDir() // where CODEX_HOME or PI_CODING_AGENT_DIR points
	tests := []struct {
		harness baton.Harness
		env     map[string]string
		file    func(Target) string
		content string
	}{
		{baton.HarnessClaude, nil, func(t Target) string { return filepath.Join(t.Home, ".claude/settings.json") }, `{"enabledPlugins":{"baton@baton":true}}`},
		{baton.HarnessClaude, nil, func(t Target) string { return filepath.Join(t.Root, ".claude/settings.json") }, `{"enabledPlugins":{"other@x":true,"baton@my-fork":true}}`},
		{baton.HarnessClaude, nil, func(t Target) string { return filepath.Join(t.Root, ".claude/settings.local.json") }, `{"enabledPlugins":{"baton@baton":true}}`},
		{baton.HarnessCodex, nil, func(t Target) string { return filepath.Join(t.Home, ".codex/config.toml") }, "[plugins.\"baton@baton\"]\nenabled = true\n"},
		{baton.HarnessCodex, nil, func(t Target) string { return filepath.Join(t.Root, ".codex/config.toml") }, "[plugins.\"baton@baton\"]\n"},
		{baton.HarnessCodex, map[string]string{"CODEX_HOME": moved}, func(t Target) string { return filepath.Join(moved, "config.toml") }, "[plugins.\"baton@baton\"]\nenabled = true\n"},
		{baton.HarnessDroid, nil, func(t Target) string { return filepath.Join(t.Home, ".factory/settings.json") }, `{"enabledPlugins":{"baton@repo":true}}`},
		{baton.HarnessPi, nil, func(t Target) string { return filepath.Join(t.Home, ".pi/agent/settings.json") }, `{"packages":["` + pkg + `"]}`},
		{baton.HarnessPi, nil, func(t Target) string { return filepath.Join(t.Root, ".pi/settings.json") }, `{"packages":[{"source":"git:github.com/baton-agent/baton@v1"}]}`},
		{baton.HarnessPi, map[string]string{"PI_CODING_AGENT_DIR": moved}, func(t Target) string { return filepath.Join(moved, "settings.json") }, `{"packages":["` + pkg + `"]}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.harness), func(t *testing.T) {
			tg := target(t, tt.harness, ScopeProject)
			tg.Getenv = func(k string) string { return tt.env[k] }
			write(t, tt.file(tg), []byte(tt.content))
			p, err := Install(tg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Changed() {
				t.Errorf("install with the plugin enabled plans changes:\n%s", Describe(p, false))
			}
			if len(p.Notes) == 0 || !strings.Contains(p.Notes[0], tt.file(tg)) || !strings.Contains(p.Notes[0], "is enabled") {
				t.Errorf("notes = %q, want one naming %s", p.Notes, tt.file(tg))
			}
			// Disabled, or someone else's plugin: install goes ahead.
			write(t, tt.file(tg), []byte(strings.NewReplacer("true", "false", "baton@", "notbaton@", pkg, "/elsewhere", "baton-agent/baton", "someone/else").Replace(tt.content)))
			if p, err := Install(tg); err != nil || !p.Changed() {
				t.Errorf("install with the plugin disabled: changed %v, %v", p != nil && p.Changed(), err)
			}
		})
	}
}

// The Stop hook may run a loop's verify commands before it answers: in
// every harness its timeout fits the longest verification, while the
// other hooks keep their short one.
func TestStopHookTimeoutFitsVerify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		harness baton.Harness
		file    func(Target) string
		flat    bool
	}{
		{baton.HarnessClaude, func(tg Target) string { return filepath.Join(tg.Root, ".claude", "settings.local.json") }, false},
		{baton.HarnessCodex, func(tg Target) string { return filepath.Join(tg.Root, ".codex", "hooks.json") }, false},
		{baton.HarnessDroid, func(tg Target) string { return filepath.Join(tg.Root, ".factory", "hooks.json") }, true},
	} {
		tg := target(t, tc.harness, ScopeProject)
		mustApply(t, Install, tg)
		var root map[string]json.RawMessage
		if err := json.Unmarshal(read(t, tc.file(tg)), &root); err != nil {
			t.Fatal(err)
		}
		events := root
		if !tc.flat {
			if err := json.Unmarshal(root["hooks"], &events); err != nil {
				t.Fatal(err)
			}
		}
		for _, ev := range []string{"SessionStart", "PostToolUse", "PreCompact", "Stop"} {
			var groups []struct {
				Hooks []struct {
					Timeout int `json:"timeout"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal(events[ev], &groups); err != nil || len(groups) != 1 || len(groups[0].Hooks) != 1 {
				t.Fatalf("%s %s: %s (%v)", tc.harness, ev, events[ev], err)
			}
			got := time.Duration(groups[0].Hooks[0].Timeout) * time.Second
			switch {
			case ev == "Stop" && got <= baton.MaxVerifyTimeout:
				t.Errorf("%s Stop timeout %s does not fit a %s verification", tc.harness, got, baton.MaxVerifyTimeout)
			case ev != "Stop" && got != hookTimeout*time.Second:
				t.Errorf("%s %s timeout %s, want %ds", tc.harness, ev, got, hookTimeout)
			}
		}
	}
}

// A checkout is not trusted to say where baton writes: a project's
// .claude/skills (or any directory install writes in) that links out of
// the project refuses the whole install, before anything is written;
// a link that stays inside the project is followed.
func TestProjectInstallStaysInTheProject(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessClaude, ScopeProject)
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tg.Root, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tg.Root, ".claude", "skills")); err != nil {
		t.Fatal(err)
	}
	p, err := Install(tg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(p, now); err == nil || !strings.Contains(err.Error(), "leads out of the project") {
		t.Fatalf("install through a link out of the project: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("install wrote %d entries outside the project", len(ents))
	}
	if _, err := os.Stat(filepath.Join(tg.Root, ".claude", "settings.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused install still wrote the settings: %v", err)
	}
	// Inside the project, a link is the project's own business.
	if err := os.Remove(filepath.Join(tg.Root, ".claude", "skills")); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(tg.Root, "shared-skills")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inside, filepath.Join(tg.Root, ".claude", "skills")); err != nil {
		t.Fatal(err)
	}
	mustApply(t, Install, tg)
	if ents, _ := os.ReadDir(inside); len(ents) == 0 {
		t.Error("install did not write the skills through a link inside the project")
	}
}

// A checkout's files are read, never waited on: a FIFO where one of
// baton's skills would be does not hold Inspect (doctor, install).
func TestReadsDoNotBlockOnFIFOs(t *testing.T) {
	t.Parallel()
	tg := target(t, baton.HarnessClaude, ScopeProject)
	skill := filepath.Join(tg.Root, ".claude", "skills", "handoff", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(skill), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(skill, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan Status, 1)
	go func() { done <- Inspect(tg) }()
	select {
	case st := <-done:
		if slices.Contains(st.Skills, skill) {
			t.Errorf("a FIFO counted as baton's skill")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Inspect blocked on a FIFO")
	}
}
