package goaltree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// readState reads a state file; a missing one means there is no run.
func (l Layout) readState(name string) ([]byte, error) {
	p := l.State(name)
	b, err := l.readFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, baton.WrapError(baton.NotFound, err, "no goal-tree run in %s (%s is missing): run `baton run init`", l.Root, l.rel(p))
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return b, nil
}

// LoadTree reads and validates state/tree.json.
func (l Layout) LoadTree() (*Node, error) {
	b, err := l.readState(treeFile)
	if err != nil {
		return nil, err
	}
	t, err := decode(b)
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "%s: fix it, then check with `baton run validate`", l.rel(l.State(treeFile)))
	}
	return t, nil
}

// TreeProblems reads state/tree.json and lists every problem, for `baton
// run validate`. A file that does not parse is one problem on the root.
func (l Layout) TreeProblems() ([]NodeProblem, *Node, error) {
	b, err := l.readState(treeFile)
	if err != nil {
		return nil, nil, err
	}
	t, err := decodeTree(b)
	if err != nil {
		return []NodeProblem{{NodeID: "(file)", Message: err.Error()}}, nil, nil
	}
	return t.Problems(), t, nil
}

// SaveTree writes state/tree.json canonically.
func (l Layout) SaveTree(t *Node) error {
	return l.writeFile(l.State(treeFile), encode(t))
}

// LoadRunState reads and validates state/run_state.json.
func (l Layout) LoadRunState() (*RunState, error) {
	b, err := l.readState(RunStateFile)
	if err != nil {
		return nil, err
	}
	s, err := decodeRunState(b)
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "%s is not valid", l.rel(l.State(RunStateFile)))
	}
	return s, nil
}

// decodeRunState parses run_state.json strictly and validates it. Errors
// are Invalid.
func decodeRunState(data []byte) (*RunState, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s *RunState
	if err := dec.Decode(&s); err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "not a run state")
	}
	if dec.More() {
		return nil, baton.Errorf(baton.Invalid, "data after the run state")
	}
	if s == nil {
		return nil, baton.Errorf(baton.Invalid, "run state is null")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// SaveRunState writes state/run_state.json.
func (l Layout) SaveRunState(s *RunState) error {
	return l.writeFile(l.State(RunStateFile), encodeJSON(s))
}

// LoadStateAndTree reads run_state.json and tree.json, what every view of
// a run starts from.
func (l Layout) LoadStateAndTree() (*RunState, *Node, error) {
	st, err := l.LoadRunState()
	if err != nil {
		return nil, nil, err
	}
	tree, err := l.LoadTree()
	if err != nil && st.InFlight != nil && baton.ErrorCode(err) == baton.Invalid {
		// The agent of an interrupted iteration may have left the tree
		// half written; the next step puts back the copy taken before it.
		return nil, nil, &baton.Error{Code: baton.Conflict, Err: err, Message: fmt.Sprintf(
			"iteration %d was interrupted and left %s unreadable: `baton run step` restores it from %s before going on",
			st.InFlight.Iter, l.rel(l.State(treeFile)), l.rel(filepath.Join(l.Iteration(st.RunID, st.InFlight.Iter), treeBeforeLog)))}
	}
	if err != nil {
		return nil, nil, err
	}
	return st, tree, nil
}

// LoadConfig reads state/config.toml.
func (l Layout) LoadConfig() (Config, error) {
	b, err := l.readState(ConfigFile)
	if err != nil {
		return Config{}, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return c, baton.WrapError(baton.Invalid, err, "%s", l.rel(l.State(ConfigFile)))
	}
	return c, nil
}

// Lock takes the runner's lock for a command that changes its state. A
// second runner in the same project is refused rather than queued: two
// agents in one work tree would trample each other.
func (l Layout) Lock(ctx context.Context) (unlock func(), err error) {
	if err := l.mkdirAll(l.State("")); err != nil {
		return nil, fmt.Errorf("create %s: %w", l.State(""), err)
	}
	lctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	unlock, err = safefile.Lock(lctx, l.lockPath())
	if err != nil {
		if ctx.Err() != nil {
			return nil, baton.WrapError(baton.Canceled, ctx.Err(), "interrupted")
		}
		return nil, baton.WrapError(baton.Unavailable, err, "another baton run command is working in %s; wait for it to finish", l.Root)
	}
	return unlock, nil
}

func encodeJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("goaltree: encode %T: %v", v, err)) // our types always marshal
	}
	return buf.Bytes()
}
