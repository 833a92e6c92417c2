package sandbox

import (
	"os"
	"os/exec"
	"testing"
)

// BenchmarkStart is what one start of /bin/true costs, boxed and not: the
// box's price for each process baton confines (each git command baton
// runs in a worktree is one). bench/boxstart times a whole agent run.
func BenchmarkStart(b *testing.B) {
	for _, m := range []struct {
		name string
		c    Confinement
	}{
		{"unboxed", Confinement{Mode: ModeOff}},
		{"namespaces", Confinement{Mode: ModeAuto}},
		{"no namespaces", Confinement{Mode: ModeAuto, NoNamespaces: true}},
	} {
		b.Run(m.name, func(b *testing.B) {
			if !m.c.NoNamespaces && m.c.Mode != ModeOff && probeHost().nsErr != nil {
				b.Skip("no namespaces here")
			}
			c := m.c
			c.Policy = System(EnvFrom(os.Environ()))
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				release, _, err := c.Start(cmd)
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
	}
}
