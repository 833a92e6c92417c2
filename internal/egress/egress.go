// Package egress is the network of a boxed run. An agent acts on text
// anyone can write, so what it can reach over the network is what a
// prompt-injected agent can send a private repository to, and which
// services of this machine (baton's API, a database that trusts
// loopback) it can use.
//
// The box gets a network namespace of its own with only a loopback
// interface: nothing in it reaches this machine's loopback or any other
// network directly. Its one way out is a unix socket to a Proxy that
// baton runs outside the box, which checks every connection against the
// run's allowlist (internal/netpolicy) and records what it refuses. Inside, the box's init
// runs the forwarders (Inside): an HTTP proxy endpoint that HTTPS_PROXY
// and HTTP_PROXY name, a listener at each allowed loopback endpoint (a
// model server on 127.0.0.1:PORT is reached at that very address), and a
// DNS stub that resolv.conf names, which answers an allowed name with an
// address of the box's own loopback whose listeners forward to that name,
// and refuses the rest. No DNS query leaves the box: allowed names are
// resolved by the proxy, outside, when a connection is made, and a name
// that is not allowed is never resolved at all.
//
// The policy lives outside the box, in the proxy: the forwarders inside
// only carry bytes and ask, so an agent that took them over gains
// nothing it could not ask the proxy for itself. Every address is local
// to the box, so a connection to one that is not allowed meets the box's
// own kernel: refused there, and reported to the proxy by a watch on the
// box's loopback, so it is recorded as well.
package egress
