package piconf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadTrust(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	project := filepath.Join(base, "work", "app")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	// A link to the project: pi keys trust by the resolved path.
	link := filepath.Join(base, "link")
	if err := os.Symlink(project, link); err != nil {
		t.Fatal(err)
	}
	q := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
	tests := []struct {
		name     string
		trust    string // "" for no trust.json
		settings string // "" for no settings.json
		dir      string
		want     Decision
		saved    string
	}{
		{"nothing saved", "", "", project, Undecided, ""},
		{"trusted", q(map[string]any{project: true}), "", project, Trusted, project},
		{"declined", q(map[string]any{project: false}), "", project, Declined, project},
		{"a parent trusted", q(map[string]any{filepath.Join(base, "work"): true}), "", project, Trusted, filepath.Join(base, "work")},
		{"the nearest decision wins", q(map[string]any{filepath.Join(base, "work"): true, project: false}), "", project, Declined, project},
		{"null is no decision", q(map[string]any{project: nil, base: true}), "", project, Trusted, base},
		{"through a link", q(map[string]any{project: true}), "", link, Trusted, project},
		{"another project", q(map[string]any{filepath.Join(base, "other"): true}), "", project, Undecided, ""},
		{"a relative key is not pi's", q(map[string]any{"work/app": true}), "", project, Undecided, ""},
		{"default always", "", `{"defaultProjectTrust":"always"}`, project, Trusted, ""},
		{"default never", "", `{"defaultProjectTrust":"never"}`, project, Declined, ""},
		{"a saved decision beats the default", q(map[string]any{project: false}), `{"defaultProjectTrust":"always"}`, project, Declined, project},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.trust != "" {
				write(t, filepath.Join(dir, "trust.json"), tt.trust)
			}
			if tt.settings != "" {
				write(t, filepath.Join(dir, "settings.json"), tt.settings)
			}
			got, err := ReadTrust(dir, tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.want || got.Saved != tt.saved {
				t.Errorf("ReadTrust(%s) = %s (saved %q), want %s (saved %q)", tt.dir, got.Decision, got.Saved, tt.want, tt.saved)
			}
		})
	}
}

func TestReadTrustBadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "trust.json"), `["not", "an", "object"]`)
	if _, err := ReadTrust(dir, dir); err == nil || !strings.Contains(err.Error(), "trust.json") {
		t.Errorf("ReadTrust of a broken trust.json = %v, want an error naming the file", err)
	}
}

func TestPackages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	write(t, file, `{"packages":["npm:@x/y@1.0.0","./local/pkg",{"source":"git:github.com/baton-agent/baton"},{"source":"/abs/pkg","skills":[]},42]}`)
	got, err := Packages(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"npm:@x/y@1.0.0", filepath.Join(dir, "local", "pkg"), "git:github.com/baton-agent/baton", "/abs/pkg"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Packages (-want +got):\n%s", diff)
	}
	if got, err := Packages(filepath.Join(dir, "none.json")); err != nil || got != nil {
		t.Errorf("Packages(missing) = %v, %v", got, err)
	}
}

// FuzzSavedDecision: whatever trust.json holds, a decision found for dir
// is the value saved under dir or one of its parents, and the nearest
// such entry.
func FuzzSavedDecision(f *testing.F) {
	f.Add([]byte(`{"/a/b":true}`), "/a/b/c")
	f.Add([]byte(`{"/a":false,"/a/b":true}`), "/a/b")
	f.Add([]byte(`{"/":true}`), "/x")
	f.Add([]byte(`{"a":true}`), "/a")
	f.Add([]byte(`null`), "/")
	f.Fuzz(func(t *testing.T, data []byte, dir string) {
		if !filepath.IsAbs(dir) {
			return
		}
		dir = filepath.Clean(dir)
		saved, ok, err := savedDecision(data, dir)
		if err != nil || saved == "" {
			return
		}
		var entries map[string]*bool
		if json.Unmarshal(data, &entries) != nil {
			t.Fatalf("a decision from bytes that are not a JSON object: %q", data)
		}
		if saved != dir && !strings.HasPrefix(dir, strings.TrimSuffix(saved, "/")+"/") {
			t.Fatalf("decision of %s taken from %s, which is not it or a parent", dir, saved)
		}
		found := false
		for k, v := range entries {
			if v == nil || !filepath.IsAbs(k) {
				continue
			}
			c := filepath.Clean(k)
			if c == saved && *v == ok {
				found = true
			}
			if len(c) > len(saved) && (c == dir || strings.HasPrefix(dir, strings.TrimSuffix(c, "/")+"/")) {
				t.Fatalf("decision of %s taken from %s, but %s is nearer", dir, saved, c)
			}
		}
		if !found {
			t.Fatalf("decision %s=%v is not in %q", saved, ok, data)
		}
	})
}
