package delivery

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
)

// WorkerID names a worker process in the phase log, the delivery row and
// the queue: <prefix>:<host>:<pid>, and on Linux :<boot> (the first
// characters of the kernel's boot id), so that a process on this machine
// can tell a dead owner from one on another machine of the same name.
func WorkerID(prefix string) string {
	id := fmt.Sprintf("%s:%s:%d", prefix, shortHost(), os.Getpid())
	if b := bootID(); b != "" {
		id += ":" + b
	}
	return id
}

func shortHost() string {
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	return host
}

// bootID is the start of /proc/sys/kernel/random/boot_id, which changes
// with every boot: the same pid in another boot is another process.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	id := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
	return id[:min(8, len(id))]
}

// OwnerGone reports whether owner (a WorkerID) is a process of this
// machine, in this boot, that no longer exists: its running phase can be
// recovered at once instead of when its lease runs out. An owner on
// another machine, or one it cannot tell, is never gone.
func OwnerGone(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 4 || parts[1] != shortHost() || parts[3] == "" || parts[3] != bootID() {
		return false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	} else if err != nil {
		return false // it exists (EPERM: another user's)
	}
	// A killed process its parent has not reaped yet is a zombie: gone.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

// runningConflict is the refusal of an action on a running phase: who
// runs it and, should that process have died, when its lease runs out
// and `run` takes over.
func runningConflict(d *baton.Delivery, lease time.Duration, now time.Time) error {
	expires := d.HeartbeatAt.Add(lease)
	when := "now"
	if wait := expires.Sub(now).Round(time.Second); wait > 0 {
		when = fmt.Sprintf("at %s (in %s)", expires.Local().Format("15:04:05"), wait)
	}
	return baton.Errorf(baton.Conflict,
		"delivery %s is %s, run by %s (last heartbeat %s ago): if that process died, its lease runs out %s and `baton delivery run %d` takes over then; `baton delivery cancel %d` stops the phase now",
		d.ID, d.String(), d.Owner, now.Sub(d.HeartbeatAt).Round(time.Second), when, d.Seq, d.Seq)
}
