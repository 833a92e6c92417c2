package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procWatch counts the processes this program's descendants start, from
// the kernel's process events (the netlink connector, which needs root):
// every fork that makes a process (not a thread) whose parent descends
// from this one, and every exec in one. It names each exec's program from
// /proc while it still runs; one gone before that is counted unnamed.
// Each counted process's life (fork to exit, by the kernel's clock) is
// kept, for the timeline of where a phase's time goes.
type procWatch struct {
	fd int
	// bootWall is the wall time of the kernel's monotonic clock's zero:
	// events carry the monotonic time.
	bootWall time.Time

	mu       sync.Mutex
	counting bool
	tree     map[uint32]string // tgids descended from this process: their program
	agent    map[uint32]bool   // those started by the agent's own program
	forks    int
	execs    map[string]int // by program, the agent's own apart
	agentN   int            // execs under the agent's program, itself included
	lost     bool           // the socket overflowed: some events were dropped
	closing  bool
	live     map[uint32]*procSpan // counted processes still running
	spans    []procSpan           // counted processes that ended
	done     chan struct{}
}

// procSpan is one process counted: when it was forked and ended, and
// what it ran (its last exec's command line).
type procSpan struct {
	pid        uint32
	top        bool // started by this program itself, not by one of its children
	start, end time.Time
	prog, argv string
	agent      bool
}

// The connector's constants (linux/connector.h, linux/cn_proc.h).
const (
	netlinkConnector  = 11
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procEventFork     = 1
	procEventExec     = 2
	procEventExit     = 0x80000000
)

// watchProcs starts counting nothing yet: start and stop bracket what is
// counted. agentProg is the agent's program (its comm), whose own process
// and everything it starts are counted apart.
func watchProcs(agentProg string) (*procWatch, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkConnector)
	if err != nil {
		return nil, fmt.Errorf("process events: %w", err)
	}
	// Forks come in bursts: a large buffer, beyond the default limit (root).
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 64<<20)
	// The reader wakes now and then to see whether the watch was closed.
	tv := syscall.NsecToTimeval(int64(100 * time.Millisecond))
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: cnIdxProc, Pid: 0}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("process events (root only): %w", err)
	}
	// nlmsghdr, cn_msg, then the operation.
	msg := make([]byte, 16+20+4)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], syscall.NLMSG_DONE)
	binary.NativeEndian.PutUint32(msg[12:], uint32(os.Getpid()))
	binary.NativeEndian.PutUint32(msg[16:], cnIdxProc)
	binary.NativeEndian.PutUint32(msg[20:], cnValProc)
	binary.NativeEndian.PutUint16(msg[32:], 4)
	binary.NativeEndian.PutUint32(msg[36:], procCnMcastListen)
	if err := syscall.Sendto(fd, msg, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("process events: %w", err)
	}
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("the monotonic clock: %w", err)
	}
	w := &procWatch{fd: fd, bootWall: time.Now().Add(-time.Duration(mono.Nano())), tree: map[uint32]string{uint32(os.Getpid()): "bench"},
		agent: map[uint32]bool{}, execs: map[string]int{}, live: map[uint32]*procSpan{}, done: make(chan struct{})}
	go w.read(agentProg)
	return w, nil
}

func (w *procWatch) read(agentProg string) {
	defer close(w.done)
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(w.fd, buf, 0)
		w.mu.Lock()
		closing := w.closing
		if errors.Is(err, syscall.ENOBUFS) {
			w.lost = w.lost || w.counting
		}
		w.mu.Unlock()
		if closing {
			return
		}
		if err != nil {
			continue // a timeout (EAGAIN), an interruption or an overflow
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			w.event(m.Data, agentProg)
		}
	}
}

// event handles one cn_msg holding a proc_event.
func (w *procWatch) event(b []byte, agentProg string) {
	const ev = 20 // cn_msg's header; then what, cpu, timestamp, the event
	if len(b) < ev+16+16 {
		return
	}
	what := binary.NativeEndian.Uint32(b[ev:])
	at := w.bootWall.Add(time.Duration(binary.NativeEndian.Uint64(b[ev+8:])))
	d := b[ev+16:]
	w.mu.Lock()
	defer w.mu.Unlock()
	switch what {
	case procEventFork:
		parentTgid, childPid, childTgid := binary.NativeEndian.Uint32(d[4:]), binary.NativeEndian.Uint32(d[8:]), binary.NativeEndian.Uint32(d[12:])
		if childPid != childTgid {
			return // a thread
		}
		prog, ok := w.tree[parentTgid]
		if !ok {
			return
		}
		w.tree[childTgid] = prog
		if w.agent[parentTgid] {
			w.agent[childTgid] = true
		}
		if !w.counting {
			return
		}
		if !w.agent[childTgid] {
			w.forks++
		}
		w.live[childTgid] = &procSpan{pid: childTgid, top: parentTgid == uint32(os.Getpid()), start: at, agent: w.agent[childTgid]}
	case procEventExec:
		tgid := binary.NativeEndian.Uint32(d[4:])
		if _, ok := w.tree[tgid]; !ok {
			return
		}
		prog, argv := programOf(tgid)
		w.tree[tgid] = prog
		if prog == agentProg {
			w.agent[tgid] = true
		}
		if sp := w.live[tgid]; sp != nil {
			sp.prog, sp.argv, sp.agent = prog, argv, w.agent[tgid]
		}
		if !w.counting {
			return
		}
		if w.agent[tgid] {
			w.agentN++
			return
		}
		w.execs[prog]++
	case procEventExit:
		pid, tgid := binary.NativeEndian.Uint32(d[0:]), binary.NativeEndian.Uint32(d[4:])
		if pid != tgid {
			return // a thread
		}
		if sp := w.live[tgid]; sp != nil {
			delete(w.live, tgid)
			sp.end = at
			if sp.argv == "" {
				sp.argv = "(a fork of " + w.tree[tgid] + ", no exec)"
			}
			w.spans = append(w.spans, *sp)
		}
		delete(w.tree, tgid)
		delete(w.agent, tgid)
	}
}

// programOf names the program process pid runs: its command name, with
// git's subcommand (the first argument not an option).
func programOf(pid uint32) (prog, argv string) {
	const gone = "(gone before it was named)"
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return gone, gone
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	argv = strings.Join(args, " ")
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	name := string(bytes.TrimSpace(comm))
	if _, err := strconv.Atoi(name); name == "" || name == "exe" || err == nil {
		// The box's init, started as /proc/self/exe or /proc/self/fd/N
		// (it names itself once running): it names itself in argv[0].
		name = filepath.Base(args[0])
	}
	if name == "git" {
		for i := 1; i < len(args); i++ {
			if a := args[i]; a == "-C" || a == "-c" {
				i++
			} else if !strings.HasPrefix(a, "-") {
				return "git " + a, argv
			}
		}
	}
	return name, argv
}

// start begins counting; stop ends it.
func (w *procWatch) start() { w.mu.Lock(); w.counting = true; w.mu.Unlock() }
func (w *procWatch) stop()  { w.mu.Lock(); w.counting = false; w.mu.Unlock() }

// close ends the watch.
func (w *procWatch) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	<-w.done
	syscall.Close(w.fd)
}

// procCount is what a watch counted.
type procCount struct {
	forks, execs, agent int
	byProg              []progCount
	lost                bool
	spans               []procSpan // the processes that ended, in the order they did
}

type progCount struct {
	prog string
	n    int
}

func (w *procWatch) count() procCount {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := procCount{forks: w.forks, agent: w.agentN, lost: w.lost, spans: slices.Clone(w.spans)}
	for p, n := range w.execs {
		c.execs += n
		c.byProg = append(c.byProg, progCount{p, n})
	}
	sort.Slice(c.byProg, func(i, j int) bool {
		if c.byProg[i].n != c.byProg[j].n {
			return c.byProg[i].n > c.byProg[j].n
		}
		return c.byProg[i].prog < c.byProg[j].prog
	})
	return c
}
