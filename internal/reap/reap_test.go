package reap_test

import (
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/reap"
)

func TestWaitReportsHowTheProcessEnded(t *testing.T) {
	t.Parallel()
	ok := exec.Command("sh", "-c", "exit 0")
	if err := ok.Start(); err != nil {
		t.Fatal(err)
	}
	if err := reap.Wait(ok); err != nil {
		t.Fatalf("exit 0: %v", err)
	}

	failed := exec.Command("sh", "-c", "exit 3")
	if err := failed.Start(); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := reap.Wait(failed); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit 3: got %v", err)
	}
	if failed.ProcessState.SysUsage() == nil {
		t.Error("the rusage is lost: Wait must leave the reaping to cmd.Wait")
	}

	killed := exec.Command("sleep", "60")
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := reap.Wait(killed); !errors.As(err, &ee) || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("killed: got %v", err)
	}

	// Exited before Wait is called: a zombie, which the pidfd reports
	// at once.
	early := exec.Command("true")
	out, err := early.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := early.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if n, _ := out.Read(buf); n != 0 { // EOF: the process has closed its stdout, so it is ending
		t.Fatalf("read %q", buf[:n])
	}
	if err := reap.Wait(early); err != nil {
		t.Fatal(err)
	}
}

// A process that leaves a child holding its stdout: WaitDelay still
// bounds the wait, as it bounds cmd.Wait.
func TestWaitKeepsWaitDelay(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "sleep 30 & exit 0")
	var out strings.Builder
	cmd.Stdout = &out
	cmd.WaitDelay = 50 * time.Millisecond
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := reap.Wait(cmd); !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("got %v, want exec.ErrWaitDelay", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("Wait took %s: the grandchild held it", d)
	}
}

// waiting reports whether a goroutine whose stack holds frame is in
// state (as runtime.Stack names it: "IO wait", "syscall").
func waiting(state, frame string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "["+state) && strings.Contains(g, frame) {
			return true
		}
	}
	return false
}

// The point of the package: while the process runs, the waiting
// goroutine is parked in the poller, not in a system call that keeps its
// P. cmd.Wait, the control, is found in waitid.
func TestWaitHoldsNoSystemCall(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("pidfds are Linux's")
	}
	for _, tc := range []struct {
		name         string
		wait         func(*exec.Cmd) error
		state, frame string
	}{
		{"cmd.Wait", (*exec.Cmd).Wait, "syscall", "os.(*Process).pidfdWait"},
		{"reap.Wait", reap.Wait, "IO wait", "internal/reap.exited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("cat")
			stdin, err := cmd.StdinPipe() // cat runs until this is closed
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- tc.wait(cmd) }()
			// Yield until the waiter is where it waits; 20 s is
			// the bound of a machine too slow to tell.
			deadline := time.Now().Add(20 * time.Second)
			found := false
			for !found && time.Now().Before(deadline) {
				runtime.Gosched()
				found = waiting(tc.state, tc.frame)
			}
			stdin.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !found {
				t.Fatalf("no goroutine in %q with %s on its stack", tc.state, tc.frame)
			}
		})
	}
}
