package sandbox

import (
	"fmt"
	"strings"
)

// The box's defences, as Status names them.
const (
	DefFiles     = "files"         // Landlock
	DefProcesses = "processes"     // pid namespace, or a subreaper
	DefLimit     = "process limit" // pids cgroup, or RLIMIT_NPROC
	DefTerminal  = "terminal"      // new session, no terminal device
	DefIPC       = "shared memory" // ipc namespace, a /dev/shm of its own
	DefHome      = "agent home"    // the agent home at $HOME
	DefCaches    = "build caches"  // caches of baton's own
	DefRoot      = "root"          // system directories narrowed for root
	DefNetwork   = "network"       // a network namespace behind baton's proxy
)

// Defence is one thing the box keeps from what runs in it, and whether
// this host enforces it.
type Defence struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	// Detail says how, or why not and what applies instead.
	Detail string `json:"detail"`
}

// Status says what this host can do to confine processes: Landlock's
// ABI, and a row per defence of the box.
type Status struct {
	// ABI is the kernel's Landlock ABI version; 0 when it has none.
	ABI int
	// Why the kernel cannot confine files, when ABI is 0.
	Why string
	// Defences has a row per defence, in a fixed order; empty when the
	// mode is off.
	Defences []Defence
}

// Available reports whether processes' files can be confined.
func (s Status) Available() bool { return s.ABI > 0 }

func (s Status) String() string {
	if s.Available() {
		return fmt.Sprintf("Landlock ABI %d", s.ABI)
	}
	return "unavailable: " + s.Why
}

// Missing names the defences not enforced, each with why.
func (s Status) Missing() []string {
	var out []string
	for _, d := range s.Defences {
		if !d.Enforced {
			out = append(out, d.Name+": "+d.Detail)
		}
	}
	return out
}

// Lines is the status as a person reads it: a line per defence, with
// "yes" or "NO".
func (s Status) Lines() []string {
	out := make([]string, 0, len(s.Defences))
	w := 0
	for _, d := range s.Defences {
		w = max(w, len(d.Name))
	}
	for _, d := range s.Defences {
		mark := "yes"
		if !d.Enforced {
			mark = "NO "
		}
		out = append(out, fmt.Sprintf("%-*s  %s  %s", w, d.Name, mark, d.Detail))
	}
	return out
}

// Summary is the status in one line: what is enforced, and what is not.
func (s Status) Summary() string {
	var on []string
	for _, d := range s.Defences {
		if d.Enforced {
			on = append(on, d.Name)
		}
	}
	line := strings.Join(on, ", ")
	if m := s.Missing(); len(m) > 0 {
		line += "; not enforced: " + strings.Join(m, "; ")
	}
	return line
}

// InitChoice is the program a box starts as its init, and why.
// Program is empty when it is this program and nothing else was looked at.
type InitChoice struct {
	// Program is where the init was read from: the program Hooks.Init
	// names, beside this one's executable, or this program itself.
	Program string `json:"program"`
	// Own is true when the init is this program itself.
	Own bool `json:"own"`
	// Why says why this program: the same build, or what is wrong with
	// the one beside it.
	Why string `json:"why"`
}
