package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The installer never damages a user's settings: a linked settings file
// is written through its link; backups never overwrite each other and the
// first keeps the original bytes; a read-only, invalid or absurdly nested
// file is refused with nothing written, the last line saying so.
func TestInstallerKeepsUsersSettingsSafe(t *testing.T) {
	t.Parallel()
	t.Run("settings file is a link", func(t *testing.T) {
		e := newEnv(t)
		e.gitRepo()
		e.vars["HOME"] = t.TempDir()
		dotfiles := filepath.Join(t.TempDir(), "dotfiles", "claude.json")
		original := "{\n  \"permissions\": {\"allow\": [\"Bash(go test *)\"]}\n}\n"
		if err := os.MkdirAll(filepath.Dir(dotfiles), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dotfiles, []byte(original), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(e.dir, ".claude", "settings.local.json")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dotfiles, link); err != nil {
			t.Fatal(err)
		}
		e.ok("", "", "install", "claude")
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the settings link was replaced by a file")
		}
		b, _ := os.ReadFile(dotfiles)
		if !strings.Contains(string(b), "hook stop --harness claude") || !strings.Contains(string(b), "Bash(go test *)") {
			t.Errorf("the link's target lacks the hooks or the user's settings:\n%s", b)
		}
		e.ok("", "", "uninstall", "claude")
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("uninstall replaced or removed the link")
		}
		if b, _ := os.ReadFile(dotfiles); strings.Contains(string(b), "baton") {
			t.Errorf("uninstall left baton's hooks in the target:\n%s", b)
		}
	})

	t.Run("backups in one second", func(t *testing.T) {
		e := newEnv(t) // the clock stands still: every run is in the same second
		e.gitRepo()
		e.vars["HOME"] = t.TempDir()
		original := "{\"model\": \"opus\"}\n"
		e.write(".claude/settings.local.json", original)
		e.ok("", "", "install", "claude")
		e.ok("", "", "uninstall", "claude")
		e.ok("", "", "install", "claude")
		backups, _ := filepath.Glob(filepath.Join(e.dir, ".claude", "settings.local.json.baton-backup-*"))
		if len(backups) != 3 {
			t.Fatalf("backups = %v, want three distinct ones", backups)
		}
		first := filepath.Join(e.dir, ".claude", "settings.local.json.baton-backup-20261122T093400Z")
		if b, err := os.ReadFile(first); err != nil || string(b) != original {
			t.Errorf("the first backup = %q, %v; want the user's original bytes", b, err)
		}
	})

	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"read-only", "{}\n", 0o444, "is read-only"},
		{"not JSON", "{\n  // a comment\n  \"model\": \"opus\",\n}\n", 0o644, "is not JSON baton can edit"},
		{"truncated", "{\"hooks\": {\"Stop\": [", 0o644, "is not JSON baton can edit"},
		{"nested 40000 deep", strings.Repeat(`{"a":`, 40000) + "1" + strings.Repeat("}", 40000), 0o644, "nested deeper than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.gitRepo()
			e.vars["HOME"] = t.TempDir()
			path := filepath.Join(e.dir, ".claude", "settings.local.json")
			e.write(".claude/settings.local.json", c.content)
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			r := e.run("", "", "install", "claude")
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			if r.code != 1 || !strings.Contains(last, c.want) || !strings.Contains(r.stderr, "no hooks were installed") && c.name != "read-only" {
				t.Errorf("install = %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if b, _ := os.ReadFile(path); string(b) != c.content {
				t.Errorf("the settings file was changed")
			}
			if _, err := os.Stat(filepath.Join(e.dir, ".claude", "commands")); err == nil {
				t.Errorf("commands were written although no hooks were")
			}
			if m, _ := filepath.Glob(path + ".baton-backup-*"); len(m) != 0 {
				t.Errorf("backups were made: %v", m)
			}
		})
	}
}

// install refuses to point hooks at the binary of `go run`, which is gone
// once it exits; a binary elsewhere, even under /tmp, is fine.
func TestInstallRefusesGoRunBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["HOME"] = t.TempDir()
	e.exe = "/tmp/go-build2741963005/b001/exe/baton"
	r := e.run("", "", "install", "claude")
	if r.code != 1 || !strings.Contains(r.stderr, "go install") || !strings.Contains(r.stderr, e.exe) {
		t.Errorf("install from go run = %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".claude")); err == nil {
		t.Error("install from go run wrote files")
	}
	e.exe = "/tmp/mybuild/exe/baton"
	e.ok("", "", "install", "claude")
}

// uninstall after install in a project that had none of these files
// leaves no file and no empty directory behind, except the backups of
// the settings files it changed.
func TestUninstallLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"claude", "droid", "pi"} {
		t.Run(h, func(t *testing.T) {
			e := newEnv(t)
			e.gitRepo()
			e.vars["HOME"] = t.TempDir()
			e.ok("", "", "install", h)
			e.ok("", "", "uninstall", h)
			var left []string
			_ = filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
				rel, _ := filepath.Rel(e.dir, p)
				if rel == ".git" || strings.HasPrefix(rel, ".git/") || rel == "." {
					if d.IsDir() && rel == ".git" {
						return filepath.SkipDir
					}
					return nil
				}
				if strings.Contains(rel, ".baton-backup-") || rel == "README.md" || strings.HasPrefix(rel, "internal") {
					return nil
				}
				left = append(left, rel)
				return nil
			})
			if len(left) > 0 {
				t.Errorf("uninstall left %v", left)
			}
		})
	}
}

// --scope user installs where the harness reads its configuration when
// CODEX_HOME or PI_CODING_AGENT_DIR moves it, and doctor looks there.
func TestUserScopeFollowsHarnessHomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["HOME"] = t.TempDir()
	codex, pi := t.TempDir(), t.TempDir()
	e.vars["CODEX_HOME"], e.vars["PI_CODING_AGENT_DIR"] = codex, pi
	r := e.ok("", "", "install", "codex", "--scope", "user")
	if _, err := os.Stat(filepath.Join(codex, "hooks.json")); err != nil {
		t.Errorf("codex hooks not in $CODEX_HOME: %v\n%s", err, r.stdout)
	}
	if !strings.Contains(r.stdout, filepath.Join(codex, "prompts")) || strings.Contains(r.stdout, "~/.codex") {
		t.Errorf("the install notes do not name $CODEX_HOME:\n%s", r.stdout)
	}
	if r := e.ok("", "", "install", "codex"); !strings.Contains(r.stdout, filepath.Join(codex, "config.toml")) {
		t.Errorf("the project install note does not name $CODEX_HOME/config.toml:\n%s", r.stdout)
	}
	e.ok("", "", "install", "pi", "--scope", "user")
	if _, err := os.Stat(filepath.Join(pi, "extensions", "baton", "index.ts")); err != nil {
		t.Errorf("pi extension not in $PI_CODING_AGENT_DIR: %v", err)
	}
	for _, d := range []string{".codex", ".pi"} {
		if _, err := os.Stat(filepath.Join(e.vars["HOME"], d)); err == nil {
			t.Errorf("install wrote ~/%s although the harness reads elsewhere", d)
		}
	}
	out := e.run("", "", "doctor", "--no-probe", "--json").stdout
	if !strings.Contains(out, filepath.Join(codex, "hooks.json")) || !strings.Contains(out, filepath.Join(pi, "extensions")) {
		t.Errorf("doctor does not look in the harness homes:\n%s", out)
	}
}

// doctor tells both Codex trust steps apart, read from $CODEX_HOME's
// config.toml, and counts them as broken until they are done.
func TestDoctorCodexTrust(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["HOME"] = t.TempDir()
	codex := t.TempDir()
	e.vars["CODEX_HOME"] = codex
	e.ok("", "", "install", "codex")
	r := e.run("", "", "doctor", "--no-probe")
	if r.code != 1 || !strings.Contains(r.stdout, "is not a trusted project") || !strings.Contains(r.stdout, "not trusted yet") || !strings.Contains(r.stdout, "SessionStart") {
		t.Errorf("doctor before trust = %d\n%s", r.code, r.stdout)
	}
	hooks := filepath.Join(e.dir, ".codex", "hooks.json")
	var cfg strings.Builder
	cfg.WriteString("[projects.\"" + e.dir + "\"]\ntrust_level = \"trusted\"\n\n")
	for _, ev := range []string{"SessionStart", "PostToolUse", "PreCompact", "Stop"} {
		cfg.WriteString("[hooks.state.\"" + hooks + ":" + ev + ":0:0\"]\ntrusted_hash = \"sha256:00\"\n")
	}
	if err := os.WriteFile(filepath.Join(codex, "config.toml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.run("", "", "doctor", "--no-probe")
	if strings.Contains(r.stdout, "trusted project") || strings.Contains(r.stdout, "not trusted yet") {
		t.Errorf("doctor after trust still complains:\n%s", r.stdout)
	}
}

// Codex gets baton's commands as skills (current Codex has no /prompts:),
// in the project's .agents/skills/, and uninstall takes them away.
func TestCodexSkills(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["HOME"] = t.TempDir()
	e.vars["CODEX_HOME"] = t.TempDir()
	r := e.ok("", "", "install", "codex")
	if !strings.Contains(r.stdout, "$pickup") {
		t.Errorf("the install notes do not name the skills:\n%s", r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(e.dir, ".agents", "skills", "pickup", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"---\n", "baton-managed", "name: pickup\n", "description: ", "baton pickup"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("SKILL.md lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "/opt/baton") {
		t.Errorf("a project skill names this machine's binary:\n%s", b)
	}
	e.ok("", "", "uninstall", "codex")
	if _, err := os.Stat(filepath.Join(e.dir, ".agents")); err == nil {
		t.Error("uninstall left .agents/")
	}
}
