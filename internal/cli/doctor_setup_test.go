package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// doctor shows the set-up a delivery into the repository would run: none
// (offering the dev container's commands), the repository's own, and a
// broken .agent/delivery.json as broken.
func TestDoctorShowsSetup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["HOME"] = t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(e.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".devcontainer/devcontainer.json", "{\n  // once\n  \"postCreateCommand\": \"npm ci\",\n}\n")
	out := e.run("", "", "doctor", "--no-probe").stdout
	if !strings.Contains(out, "set-up: none") || !strings.Contains(out, ".devcontainer/devcontainer.json has 1: `npm ci`; use them with \"setup_from\": \"devcontainer\"") {
		t.Errorf("doctor without a set-up:\n%s", out)
	}
	write(".agent/delivery.json", `{"setup": ["go mod download", "npm ci"], "setup_files": ["go.sum"], "setup_egress_allow": ["127.0.0.1:4873"]}`)
	out = e.run("", "", "doctor", "--no-probe").stdout
	for _, want := range []string{"set-up: 2 command(s) from .agent/delivery.json", "  $ go mod download\n  $ npm ci\n", "again when one of these changes: go.sum", "it alone reaches 127.0.0.1:4873"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		Setup struct {
			Commands    []string `json:"commands"`
			From        string   `json:"from"`
			Files       []string `json:"files"`
			EgressAllow []string `json:"egress_allow"`
		} `json:"setup"`
	}
	js := e.run("", "", "doctor", "--no-probe", "--json").stdout
	if err := json.Unmarshal([]byte(js), &rep); err != nil || !slices.Equal(rep.Setup.Commands, []string{"go mod download", "npm ci"}) ||
		rep.Setup.From != ".agent/delivery.json" || !slices.Equal(rep.Setup.Files, []string{"go.sum"}) || !slices.Equal(rep.Setup.EgressAllow, []string{"127.0.0.1:4873"}) {
		t.Errorf("doctor --json set-up = %+v, %v", rep.Setup, err)
	}
	write(".agent/delivery.json", `{"setup_from": "devcontainer"}`)
	out = e.run("", "", "doctor", "--no-probe").stdout
	if !strings.Contains(out, "set-up: 1 command(s) from .devcontainer/devcontainer.json") {
		t.Errorf("doctor with the dev container's set-up:\n%s", out)
	}
	write(".agent/delivery.json", `{"setup": ["npm ci"], "setup_file": ["typo"]}`)
	r := e.run("", "", "doctor", "--no-probe")
	if r.code != 1 || !strings.Contains(r.stdout, "broken: a delivery into this repository cannot start: bad .agent/delivery.json") {
		t.Errorf("doctor with a bad delivery.json = %d:\n%s", r.code, r.stdout)
	}
}

// --setup and --setup-egress-allow set a delivery's set-up over the
// repository's, and `delivery show` says what it runs; a blank command
// is refused with the flag's name.
func TestDeliveryCreateSetupFlags(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	if err := os.MkdirAll(filepath.Join(e.dir, ".agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, ".agent", "delivery.json"), []byte(`{"setup": ["make deps"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run("", "", "delivery", "create", "--repo", ".", "--summary", "blank", "--setup", " ")
	if r.code != 2 || !strings.Contains(r.stderr, "bad --setup") {
		t.Errorf("a blank --setup = %d %s", r.code, r.stderr)
	}
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint", "--setup", "npm ci", "--setup", "go mod download",
		"--setup-egress-allow", "127.0.0.1:4873")
	out := e.ok("", "", "delivery", "show", "1").stdout
	if !strings.Contains(out, "set-up:") || !strings.Contains(out, "`npm ci`; `go mod download`\n") || !strings.Contains(out, "the set-up alone reaches 127.0.0.1:4873") || strings.Contains(out, "make deps") {
		t.Errorf("delivery show:\n%s", out)
	}
}
