package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// Init builds the box's side of the network from spec (Box.Spec): it
// puts the stub's resolv.conf in place and starts the forwarders. The
// box's init calls it in the box's network and mount namespaces, as
// their root, before the process starts, and calls stop once the process
// ended: it reports what the box's kernel refused last, then ends the
// forwarders.
func Init(spec json.RawMessage, _ []*os.File) (stop func(), err error) {
	var s boxSpec
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, fmt.Errorf("read the network's spec: %w", err)
	}
	if s.Resolv != "" {
		if err := BindResolvConf(s.Resolv); err != nil {
			return nil, err
		}
	}
	in, err := StartInside(context.Background(), s.Plan)
	if err != nil {
		return nil, err
	}
	return func() { in.Close() }, nil
}
