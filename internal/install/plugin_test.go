package install

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/golden"
	"github.com/baton-agent/baton/internal/harness"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// The committed plugin tree and marketplace files are what PluginFiles
// generates from integrations/ and internal/hook: edit those, then run
// go test ./internal/install -update. Nothing else lives in the plugin
// directory, and the shim is executable.
func TestPluginTreeIsGenerated(t *testing.T) {
	t.Parallel()
	files, err := PluginFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range PluginPaths(files) {
		full := filepath.Join(repoRoot, filepath.FromSlash(p))
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if golden.Update() {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, files[p], mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(full, mode); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(full)
		if err != nil {
			t.Errorf("%s is missing: run go test ./internal/install -update", p)
			continue
		}
		if diff := cmp.Diff(string(files[p]), string(got)); diff != "" {
			t.Errorf("%s is not what the generator writes (run go test ./internal/install -update; -want +got):\n%s", p, diff)
		}
		if fi, err := os.Stat(full); err == nil && fi.Mode().Perm()&0o111 != mode&0o111 {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
	err = filepath.WalkDir(filepath.Join(repoRoot, PluginDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			if golden.Update() {
				return os.Remove(p)
			}
			t.Errorf("%s is not generated: remove it, or generate it in PluginFiles", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Codex keeps a plugin per version, so a changed plugin tree under the
// same version would reach nobody who installed the old one.
// testdata/plugin_version.txt records the version and a digest of the
// tree it was given to (with the version itself masked): a change to the
// tree fails here until pluginVersion is raised, and -update records the
// new pair then, never before.
func TestPluginVersionFollowsTheTree(t *testing.T) {
	t.Parallel()
	files, err := PluginFiles()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, p := range PluginPaths(files) {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(files[p]))
		h.Write(bytes.ReplaceAll(files[p], []byte(pluginVersion), []byte("VERSION")))
	}
	got := fmt.Sprintf("%s %x\n", pluginVersion, h.Sum(nil))
	path := filepath.Join("testdata", "plugin_version.txt")
	recorded, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	version, digest, _ := strings.Cut(strings.TrimSpace(string(recorded)), " ")
	switch {
	case string(recorded) == got:
	case version == pluginVersion:
		t.Errorf("the plugin tree changed since version %s was recorded (%s): raise pluginVersion, then run go test ./internal/install -update", version, digest[:min(12, len(digest))])
	case golden.Update():
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Errorf("pluginVersion %s is not recorded in %s: run go test ./internal/install -update", pluginVersion, path)
	}
}

// The plugin's hooks files come from the harness table. A file two
// harnesses share passes the second one's root variable as the shim's
// third argument, and the shim reads a non-empty one as Droid: only
// Droid may share another's file.
func TestPluginHookFiles(t *testing.T) {
	t.Parallel()
	files := pluginHookFiles()
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
		for _, h := range f.sharers[1:] {
			if h != harness.Droid || len(f.sharers) > 2 {
				t.Errorf("%s shares %s with %v: the shim can tell only Droid apart", h.Name, f.path, f.sharers)
			}
		}
	}
	if want := []string{"hooks/hooks.json", "hooks/codex.json"}; !slices.Equal(paths, want) {
		t.Errorf("plugin hooks files = %q, want %q", paths, want)
	}
	if got, want := pluginHookCommand(files[0].sharers, harness.Stop), `sh "${CLAUDE_PLUGIN_ROOT}/hooks/baton-hook.sh" stop claude "${DROID_PLUGIN_ROOT}"`; got != want {
		t.Errorf("Claude Code's and Droid's hook command = %s, want %s", got, want)
	}
	if got, want := pluginHookCommand(files[1].sharers, harness.Stop), `sh "${PLUGIN_ROOT}/hooks/baton-hook.sh" stop codex`; got != want {
		t.Errorf("Codex's hook command = %s, want %s", got, want)
	}
}
