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
// or of its slug, or the foreground loop for "" and "current". A named
// loop never depends on the foreground pointer, so a damaged pointer
// hides only the foreground loop; a pointer at a loop that is gone reads
// as none (ErrNoForeground). Every edge resolves loops through it.
func Resolve(st *fsstore.Store, ref string) (*baton.Loop, error) {
	switch strings.TrimSpace(ref) {
	case "", Current:
		l, err := st.ForegroundLoop()
		if err != nil {
			return nil, err
		}
		if l == nil {
			return nil, ErrNoForeground
		}
		return l, nil
	}
	return st.ResolveLoop(ref)
}
