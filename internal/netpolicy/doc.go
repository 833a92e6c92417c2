// Package netpolicy is what a boxed run may reach over the network: the
// allowlist (host names, name patterns, addresses, each with its ports),
// how it is written (flags, BATON_EGRESS_ALLOW, .agent/delivery.json),
// its defaults (package registries, github.com), and the record of what
// was refused. It holds no network code: internal/egress enforces it,
// and internal/sandbox carries it to each box without linking a proxy
// into every program that starts one.
package netpolicy
