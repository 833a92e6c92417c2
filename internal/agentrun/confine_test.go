package agentrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Every executor runs confined: it writes its working directory and its
// own temporary directory, the files named in its argv (codex's schema
// and last message) go there rather than to LogDir, it cannot write
// beside its working directory, and the run says it was confined.
func TestRunConfined(t *testing.T) {
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			outside := t.TempDir()
			fake := agenttest.New(t, agenttest.Turn{
				Files: []agenttest.File{{Path: "done.txt", Content: "ok\n"}},
				Commands: []agenttest.Command{
					{Argv: []string{"sh", "-c", `echo tmp > "$TMPDIR/scratch"`}},
					{Argv: []string{"touch", filepath.Join(outside, "escaped")}, AllowFail: true},
				},
				Final: `{"verdict":"pass"}`,
			})
			var live syncBuffer
			s := spec(t, fake, agent)
			s.Live = &live
			s.OutputSchema = []byte(`{"type":"object","properties":{"verdict":{"type":"string"}},"required":["verdict"]}`)
			s.Confine = &sandbox.Confinement{Mode: sandbox.ModeRequired, Policy: fake.Sandbox()}
			res, err := Run(t.Context(), s)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if _, err := os.Stat(filepath.Join(s.Dir, "done.txt")); err != nil {
				t.Errorf("the confined agent could not write its working directory: %v", err)
			}
			if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
				t.Error("the confined agent wrote outside its directories")
			}
			if !res.Sandbox.Confined || !strings.Contains(live.String(), "baton: the agent runs confined (Landlock ABI") {
				t.Errorf("report %v, live %q: want the run to say it was confined", res.Sandbox, live.String())
			}
			for _, a := range res.Argv {
				if strings.HasPrefix(a, s.LogDir) {
					t.Errorf("argv names %s in LogDir, which a confined agent cannot write", a)
				}
			}
		})
	}
}
