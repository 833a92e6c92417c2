package sandbox

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// A child started unconfined, with the parent-death signal baton gives
// every child (proc.GroupAttr), lives as long as baton, however many
// boxes start and end meanwhile. The signal follows the OS thread that
// forked the child: a box's start once ended its thread, which the
// runtime may earlier have used to fork such a child, killing it.
func TestBoxesEndNoThreadAChildDependsOn(t *testing.T) {
	if st := Probe(); !st.Available() {
		t.Skipf("no box here: %s", st.Why)
	}
	var children []*exec.Cmd
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 6 {
				c := exec.Command("sleep", "300")
				c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // as proc.GroupAttr
				if err := c.Start(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				children = append(children, c)
				mu.Unlock()
				cmd := exec.Command("/bin/true")
				release, _, err := Confinement{Mode: ModeAuto, Policy: System(EnvFrom(os.Environ()))}.Start(cmd)
				if err != nil {
					t.Error(err)
					return
				}
				_ = cmd.Wait()
				release()
			}
		}()
	}
	wg.Wait()
	killed := 0
	for _, c := range children {
		var ws syscall.WaitStatus
		if pid, _ := syscall.Wait4(c.Process.Pid, &ws, syscall.WNOHANG, nil); pid == c.Process.Pid {
			killed++
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if killed > 0 {
		t.Errorf("%d of %d children started unconfined died while boxes started and ended", killed, len(children))
	}
}
