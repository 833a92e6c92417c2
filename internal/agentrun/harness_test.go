package agentrun_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/harness"
)

// agentrun runs agents; it reads Codex's trust (internal/codexconf) but
// never links the installer, which writes harness configuration, nor the
// context store and the hook, which codexconf once brought in for one
// function.
func TestAgentrunLinksNeitherInstallerNorStore(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the package's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/install", "/internal/fsstore", "/internal/hook"} {
			if strings.HasSuffix(dep, banned) {
				t.Errorf("internal/agentrun depends on %s", dep)
			}
		}
	}
}

// The harness table's Agent flag says which harnesses agentrun can run:
// completion, serve and the dashboard offer exactly those.
func TestHarnessTableAgents(t *testing.T) {
	t.Parallel()
	for _, h := range harness.Harnesses {
		argv, err := agentrun.Command(agentrun.Spec{Agent: string(h.Name), Prompt: "x"})
		if h.Agent && (err != nil || len(argv) == 0 || argv[0] != string(h.Name)) {
			t.Errorf("%s is an agent in the harness table, but Command = %q, %v", h.Name, argv, err)
		}
		if !h.Agent && err == nil {
			t.Errorf("%s is no agent in the harness table, but Command = %q", h.Name, argv)
		}
	}
}
