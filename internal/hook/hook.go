// Package hook is baton's harness-neutral hook logic: it reads a harness's
// hook payload, acts on the context store (sessions, relevant files, the
// loop engine, pre-compaction packets) and answers in the harness's
// contract. Each harness is one entry of the table in harness.go.
//
// Every hook fails open: a payload that is not JSON, an oversized stdin,
// a missing store, a lock that cannot be taken or any internal error
// prints one line on stderr and exits 0 with no stdout, so the agent's
// session goes on. The only deliberate interruption is the loop's block
// of a Stop, which is a JSON decision, never an exit code.
//
// This package must stay fast and small: it never opens a database or
// the network.
package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/harness"
)

// Payload is a hook's input, whatever the harness. Every field is
// optional: harnesses add and drop fields between versions.
type Payload struct {
	SessionID      string
	TranscriptPath string
	CWD            string
	EventName      string
	Source         string // session-start: startup, resume, clear, compact, fork
	// LastAssistantMessage is nil when the payload has no such field (or
	// it is null): the transcript is the fallback then.
	LastAssistantMessage *string
	StopHookActive       bool
	ToolName             string
	ToolInput            json.RawMessage
	ToolResponse         json.RawMessage
	Trigger              string // pre-compact: manual, auto
}

// MaxPayload caps what a hook reads from stdin. A Write of a huge file
// carries the file in tool_input; past this the hook gives up and fails
// open.
const MaxPayload = 16 << 20

// lockTimeout bounds how long a hook waits for a store lock: a wedged
// process must not hang the agent.
const lockTimeout = 5 * time.Second

// Env is what a hook run needs from the process.
type Env struct {
	Getenv  func(string) string
	Now     func() time.Time
	WorkDir string // the process directory: the last resort for the root
	Root    string // an explicit root (--root, BATON_ROOT); "" to resolve
	Stderr  io.Writer
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Run handles one hook event: it reads the payload from stdin, acts, and
// writes the harness's answer to stdout. It returns the exit code, which
// is always 0: blocking is done with the harness's JSON decision.
func Run(ctx context.Context, h *harness.Harness, event harness.Event, stdin io.Reader, stdout io.Writer, env Env) (code int) {
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(env.Stderr, "baton hook %s (%s): %s; the session goes on\n", event, h.Name, oneLine(fmt.Sprintf(format, args...)))
		return 0
	}
	defer func() {
		if r := recover(); r != nil {
			code = fail("internal error: %v", r)
		}
	}()
	data, err := io.ReadAll(io.LimitReader(stdin, MaxPayload+1))
	if err != nil {
		return fail("cannot read the payload: %v", err)
	}
	if len(data) > MaxPayload {
		return fail("the payload is over %d MiB; ignored", MaxPayload>>20)
	}
	p, err := Decode(data)
	if err != nil {
		return fail("the payload is not a JSON object: %v", err)
	}
	root, how := env.Root, fsstore.Found("override")
	if root == "" {
		root, how = ResolveRoot(p.CWD, env.getenv(h.ProjectDirEnv), env.WorkDir)
	}
	st := fsstore.Open(root, fsstore.Options{Now: env.now, OneShot: true})
	base := ctx
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	hd := handler{harness: h, st: st, p: p, env: env, mayCreate: how != fsstore.FoundWorkDir, event: event, base: base}
	var r harness.Result
	switch event {
	case harness.SessionStart:
		r, err = hd.sessionStart(ctx)
	case harness.Stop:
		r, err = hd.stop(ctx)
	case harness.PostToolUse:
		r, err = hd.postToolUse(ctx)
	case harness.PreCompact:
		r, err = hd.preCompact(ctx)
	default:
		return fail("unknown event")
	}
	if err != nil {
		return fail("%s", describe(err))
	}
	if out := h.Encode(event, r); len(out) > 0 {
		if _, err := stdout.Write(out); err != nil {
			return fail("cannot write the answer: %v", err)
		}
	}
	return 0
}

// describe is an error as a hook's line says it: its user-safe message;
// for an Invalid or NotFound error without one (a store file that is
// corrupt or refused), its own text, which names the file and what is
// wrong with it; else "internal error" and the cause.
func describe(err error) string {
	if m := baton.ErrorMessage(err); m != "internal error" {
		return m
	}
	if baton.ErrorCode(err) != baton.Internal {
		return err.Error()
	}
	return "internal error: " + err.Error()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// handler carries one hook run's state.
type handler struct {
	harness *harness.Harness
	st      *fsstore.Store
	p       *Payload
	env     Env
	// mayCreate is false when the root is neither in a git work tree nor
	// named by the user: a hook must not create a store there.
	mayCreate bool
	event     harness.Event
	// base is the hook's context without the lock timeout: a loop's
	// verification outlasts it, and takes its locks afresh after.
	base context.Context
}

// warn tells the user, on stderr, about something the hook left out;
// the hook goes on.
func (h handler) warn(format string, args ...any) {
	fmt.Fprintf(h.env.Stderr, "baton hook %s (%s): %s\n", h.event, h.harness.Name, oneLine(fmt.Sprintf(format, args...)))
}

// errNoStore is the fail-open reason for events that need a store.
func (h handler) errNoStore() error {
	return baton.Errorf(baton.NotFound, "no context store at %s (run `baton init` there, or start a new session)", h.st.Root())
}
