package install

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/golden"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// The committed plugin tree and marketplace files are what PluginFiles
// generates from integrations/ and internal/hook: edit those, then run
// go test ./internal/install -update. Nothing else lives in the plugin
// directory, and the shim is executable.
func TestPluginTreeIsGenerated(t *testing.T) {
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
