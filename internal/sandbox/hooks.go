package sandbox

import (
	"encoding/json"
	"os"
	"sync/atomic"
)

// Hooks are what other packages add to the box's init. Main takes them.
type Hooks struct {
	// Network, when set, runs in the init inside the box's namespaces,
	// before the process starts, with the spec baton's side of the
	// network made for this box and the files it handed on. An error
	// stops the start.
	Network func(spec json.RawMessage, files []*os.File) error
}

var (
	hooks      Hooks
	mainCalled atomic.Bool // Main returned: this program can be the init
)

// NamespacesVar turns the box's namespaces off when "off": baton then
// builds the box as on a host without user namespaces, to test that path
// or to run where namespaces misbehave.
const NamespacesVar = "BATON_SANDBOX_NAMESPACES"
