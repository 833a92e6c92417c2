package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/baton-agent/baton/internal/netpolicy"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Box is one box's network as seen from outside: the proxy serving its
// socket, and what the box's init needs to build its side. Open one per
// start; Close it after the box ended.
type Box struct {
	dir      string
	plan     Plan
	proxy    *Proxy
	refusals netpolicy.Refusals
	cancel   context.CancelFunc
	done     chan error
}

// boxSpec is what the init's side reads (Init): the plan, and the
// resolv.conf to put in place.
type boxSpec struct {
	Plan   Plan   `json:"plan"`
	Resolv string `json:"resolv"`
}

// Open starts the proxy for a box that may reach what allow allows, in a
// directory of its own under the temporary directory that only this user
// can enter. onRefuse, when set, hears of each refusal as it happens.
func Open(allow netpolicy.Allowlist, onRefuse func(netpolicy.Refusal)) (*Box, error) {
	dir, err := os.MkdirTemp("", "baton-net-")
	if err != nil {
		return nil, fmt.Errorf("create the box's network directory: %w", err)
	}
	b := &Box{dir: dir, done: make(chan error, 1)}
	fail := func(err error) (*Box, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(ResolvConf), 0o644); err != nil {
		return fail(fmt.Errorf("write the box's resolv.conf: %w", err))
	}
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fail(fmt.Errorf("listen for the box: %w", err))
	}
	b.proxy = &Proxy{Allow: allow, OnRefuse: onRefuse, Refusals: &b.refusals}
	b.plan = NewPlan(sock, allow)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.done <- b.proxy.Serve(ctx, l) }()
	return b, nil
}

// Spec is what the box's init hands to Init.
func (b *Box) Spec() json.RawMessage {
	raw, _ := json.Marshal(boxSpec{Plan: b.plan, Resolv: filepath.Join(b.dir, "resolv.conf")})
	return raw
}

// Env is what the boxed process's environment needs: the proxy
// variables (Plan.Env).
func (b *Box) Env() []string { return b.plan.Env() }

// Refusals is what the proxy refused so far.
func (b *Box) Refusals() (list []netpolicy.RefusalCount, more int) { return b.refusals.List() }

// Counts are how many connections and lookups the proxy allowed and
// refused so far.
func (b *Box) Counts() (allowed, refused int64) { return b.proxy.Counts() }

// Close stops the proxy, ends the connections it carries and removes its
// directory. Call it after the box ended: what the box's init reported
// as it closed is recorded by then.
func (b *Box) Close() error {
	b.cancel()
	var err error
	select {
	case err = <-b.done:
	case <-time.After(time.Minute): // Serve ends its connections at once; a hang is a bug, not worth holding a run for
		err = fmt.Errorf("the box's proxy did not stop")
	}
	os.RemoveAll(b.dir)
	return err
}
