package delivery

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// OwnerGone is true only for a process of this machine and boot that no
// longer exists; anything it cannot be sure of is alive.
func TestOwnerGone(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("boot ids are Linux only")
	}
	self := WorkerID("worker")
	if parts := strings.Split(self, ":"); len(parts) != 4 || parts[2] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("WorkerID = %q, want worker:<host>:<pid>:<boot>", self)
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strings.Replace(self, ":"+strconv.Itoa(os.Getpid())+":", ":"+strconv.Itoa(c.Process.Pid)+":", 1)
	parts := strings.Split(dead, ":")
	for owner, want := range map[string]bool{
		self: false, // this process
		dead: true,  // exited and reaped
		strings.Join([]string{parts[0], "elsewhere", parts[2], parts[3]}, ":"): false, // another machine
		strings.Join([]string{parts[0], parts[1], parts[2], "00000000"}, ":"):  false, // another boot, or machine of the same name
		strings.Join(parts[:3], ":"):                                           false, // no boot id: cannot tell
		"worker:gone:1":                                                        false,
		"":                                                                     false,
	} {
		if got := OwnerGone(owner); got != want {
			t.Errorf("OwnerGone(%q) = %v, want %v", owner, got, want)
		}
	}
}
