package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A Kubernetes secret volume: the file is a link into ..data.
	if err := os.MkdirAll(filepath.Join(dir, "..data"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("..data/api-token", "from-volume\n")
	if err := os.Symlink("..data/api-token", filepath.Join(dir, "api-token")); err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "github-token"), []byte("ghp_from_credentials\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"BATON_API_TOKEN":       "from-env",
		"BATON_API_TOKEN_FILE":  filepath.Join(dir, "api-token"),
		"CREDENTIALS_DIRECTORY": creds,
		"PATH":                  "/usr/bin",
	}
	s := NewSecrets(func(k string) string { return vars[k] })
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"BATON_API_TOKEN": "from-volume",          // the file wins over the variable
		"GH_TOKEN":        "ghp_from_credentials", // systemd's LoadCredential
		"PATH":            "/usr/bin",             // everything else as it is
	} {
		if got := s.Getenv(name); got != want {
			t.Errorf("Getenv(%s) = %q, want %q", name, got, want)
		}
	}
	paths := strings.Join(s.Paths(), " ")
	if !strings.Contains(paths, creds) || !strings.Contains(paths, filepath.Join(dir, "api-token")) {
		t.Errorf("Paths() = %s, want the credentials directory and the token file", paths)
	}

	// A file named but unreadable is an error, and its secret is empty,
	// never the variable behind it.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for file, why := range map[string]string{filepath.Join(dir, "missing"): "no such file", fifo: "not a regular file", write("empty", "\n"): "empty"} {
		vars := map[string]string{"GH_TOKEN": "ghp_env", "BATON_GITHUB_TOKEN_FILE": file}
		s := NewSecrets(func(k string) string { return vars[k] })
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "BATON_GITHUB_TOKEN_FILE") {
			t.Errorf("secret file %s: Err() = %v, want %q", file, err, why)
		}
		if got := s.Getenv("GH_TOKEN"); got != "" {
			t.Errorf("secret file %s unreadable: GH_TOKEN = %q, want empty", file, got)
		}
	}
	// A flag's file.
	s = NewSecrets(func(string) string { return "" })
	if err := s.Set("GH_TOKEN", write("gh", "ghp_flag")); err != nil || s.Getenv("GH_TOKEN") != "ghp_flag" {
		t.Errorf("Set = %v, GH_TOKEN %q", err, s.Getenv("GH_TOKEN"))
	}
	if err := s.Set("GH_TOKEN", filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "--github-token-file") {
		t.Errorf("Set of a missing file = %v, want it to name the flag", err)
	}
}
