package loop

import (
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// Current is the loop reference that names the foreground loop; so does
// an empty one.
const Current = "current"

// ErrNoForeground is Resolve's NotFound error when no loop is named and no
// foreground loop exists.
var ErrNoForeground = baton.Errorf(baton.NotFound, "no foreground loop: start one (`baton loop start`, or loop_start over MCP), or name one (`baton loop list`)")

// Resolve finds the loop ref names: an exact id, a unique prefix of the id
// or of its slug, or for "" and "current" the foreground loop of session
// (see Foreground). A named loop never depends on the foreground pointer,
// so a damaged pointer hides only the foreground loop; a pointer at a
// loop that is gone reads as none (ErrNoForeground). Every edge resolves
// loops through it.
func Resolve(st *fsstore.Store, ref, session string) (*baton.Loop, error) {
	switch strings.TrimSpace(ref) {
	case "", Current:
		id, err := Foreground(st, session)
		if err != nil {
			return nil, err
		}
		l, err := st.FindLoopByID(id)
		if baton.ErrorCode(err) == baton.NotFound {
			return nil, ErrNoForeground
		}
		return l, err
	}
	return st.ResolveLoop(ref)
}

// Foreground is the id of the loop "current" names for session: the
// session's own foreground loop, else the unbound one. Outside a session
// (session "") with no unbound loop, it is the one session's loop when
// exactly one session has a loop; with several it is a Conflict that
// names them, since guessing would steer another session's loop.
func Foreground(st *fsstore.Store, session string) (string, error) {
	f, err := st.Foreground()
	if err != nil {
		return "", err
	}
	if id := f.Of(session); id != "" {
		return id, nil
	}
	ids := f.IDs()
	switch {
	case session != "" || len(ids) == 0:
		return "", ErrNoForeground
	case len(ids) == 1:
		return ids[0], nil
	}
	return "", baton.Errorf(baton.Conflict, "%d sessions have a foreground loop (%s): name one (`baton loop list`)", len(ids), strings.Join(ids, ", "))
}
