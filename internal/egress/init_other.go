//go:build !linux

package egress

import (
	"encoding/json"
	"errors"
	"os"
)

// Init is the box's side of the network; only Linux has the namespaces
// it needs.
func Init(json.RawMessage, []*os.File) (stop func(), err error) {
	return nil, errors.New("a box's network needs Linux network namespaces")
}
