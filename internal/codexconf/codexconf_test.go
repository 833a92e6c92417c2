package codexconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/harness"
)

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// batonHooks is a project hooks file as `baton install codex` writes it,
// plus a hook of the user's own.
func batonHooks(exe string) string {
	var b strings.Builder
	b.WriteString(`{"hooks":{`)
	for i, ev := range []string{"SessionStart", "Stop"} {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + ev + `":[{"hooks":[{"type":"command","command":"` + harness.Command(exe, harness.Stop, "codex") + `"}]}]`)
	}
	b.WriteString(`,"PreToolUse":[{"hooks":[{"type":"command","command":"~/bin/audit.sh"}]}]}}`)
	return b.String()
}

func trustConfig(project string, trusted bool, events ...string) string {
	var b strings.Builder
	if trusted {
		b.WriteString("[projects.\"" + project + "\"]\ntrust_level = \"trusted\"\n")
	}
	for _, ev := range events {
		b.WriteString("[hooks.state.\"" + filepath.Join(project, ".codex", "hooks.json") + ":" + ev + ":0:0\"]\ntrusted_hash = \"sha256:00\"\n")
	}
	return b.String()
}

func TestHooksOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		hooks  string // "" for no hooks file
		mode   os.FileMode
		config string // "" for no config.toml
		want   string // substring; "" for none
	}{
		{"no hooks file", "", 0o644, "", ""},
		{"only the user's own hooks", `{"hooks":{"Stop":[{"hooks":[{"command":"~/bin/notify.sh"}]}]}}`, 0o644, "", ""},
		{"not JSON", `{ nope`, 0o644, "", ""},
		{"untrusted project", batonHooks("/usr/local/bin/baton"), 0o644, "", "is not a trusted project in"},
		{"hooks not reviewed", batonHooks("/usr/local/bin/baton"), 0o644, "<trusted>", "its SessionStart, Stop hook(s) are not trusted"},
		{"one hook not reviewed", batonHooks("/usr/local/bin/baton"), 0o644, "<trusted> Stop", "its SessionStart hook(s) are not trusted"},
		{"all reviewed", batonHooks("/usr/local/bin/baton"), 0o644, "<trusted> SessionStart Stop", ""},
		// A read-only hooks file is read all the same: Codex reads it.
		{"read-only hooks file", batonHooks("/opt/my tools/baton"), 0o444, "", "is not a trusted project"},
		{"a wrongly shaped group is skipped", `{"hooks":{"Stop":["x",{"hooks":[7,{"command":"baton hook stop --harness codex"}]}]}}`, 0o644, "<trusted>", "its Stop hook(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			project, home := t.TempDir(), t.TempDir()
			if tt.hooks != "" {
				write(t, HooksFile("", project), tt.hooks, tt.mode)
			}
			if tt.config != "" {
				fields := strings.Fields(tt.config)
				write(t, filepath.Join(home, ".codex", "config.toml"), trustConfig(project, fields[0] == "<trusted>", fields[1:]...), 0o644)
			}
			got := HooksOff(project, home, nil)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("HooksOff() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadTrust(t *testing.T) {
	t.Parallel()
	dir, project := t.TempDir(), t.TempDir()
	tr, err := ReadTrust(dir, project)
	if err != nil || tr.ProjectTrusted || len(tr.TrustedEvents) != 0 {
		t.Errorf("ReadTrust(no config) = %+v, %v; want nothing trusted", tr, err)
	}
	cfg := trustConfig(project, true, "Stop", "PostToolUse") +
		"[hooks.state.\"" + filepath.Join(dir, "hooks.json") + ":SessionStart:0:0\"]\ntrusted_hash = \"sha256:01\"\n" +
		"[hooks.state.\"" + filepath.Join(project, ".codex", "hooks.json") + ":PreCompact:0:0\"]\ntrusted_hash = \"\"\n"
	write(t, filepath.Join(dir, "config.toml"), cfg, 0o644)
	tr, err = ReadTrust(dir, project)
	want := Trust{Config: filepath.Join(dir, "config.toml"), ProjectTrusted: true, TrustedEvents: []string{"PostToolUse", "Stop"}}
	if err != nil || !cmp.Equal(tr, want) {
		t.Errorf("ReadTrust(project) = %+v, %v; want %+v", tr, err, want)
	}
	tr, err = ReadTrust(dir, "")
	want = Trust{Config: filepath.Join(dir, "config.toml"), ProjectTrusted: true, TrustedEvents: []string{"SessionStart"}}
	if err != nil || !cmp.Equal(tr, want) {
		t.Errorf("ReadTrust(user) = %+v, %v; want %+v", tr, err, want)
	}
	write(t, filepath.Join(dir, "config.toml"), "[projects\n", 0o644)
	if _, err := ReadTrust(dir, project); err == nil || !strings.Contains(err.Error(), "config.toml") {
		t.Errorf("ReadTrust(bad TOML) = %v, want an error naming the file", err)
	}
}
