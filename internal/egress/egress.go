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
// run's Allowlist and records what it refuses. Inside, the box's init
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
// nothing it could not ask the proxy for itself.
package egress

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Refusal is one connection or name the proxy refused.
type Refusal struct {
	At   time.Time `json:"at"`
	Host string    `json:"host"`
	Port int       `json:"port,omitempty"` // 0 for a DNS query
	// Via is how the box asked: "dns" (a name looked up), "connect" (a
	// tunnel: HTTPS through the proxy, or a connection to an in-box
	// address), "http" (a plain HTTP request through the proxy).
	Via string `json:"via"`
	// Why is one line: "not on the allowlist", "resolves to a loopback
	// address".
	Why string `json:"why"`
}

// Target is host:port, or the host for a DNS query.
func (r Refusal) Target() string {
	if r.Port == 0 {
		return r.Host
	}
	return Rule{Host: r.Host, Port: r.Port}.String()
}

func (r Refusal) String() string {
	what := "connection to " + r.Target()
	if r.Via == "dns" {
		what = "DNS lookup of " + r.Host
	}
	return fmt.Sprintf("refused %s (%s)", what, r.Why)
}

// Refusals collects what a proxy refused during one run, each distinct
// target once with a count, at most MaxRefusals of them: a flood of
// attempts costs a counter, not memory.
type Refusals struct {
	mu      sync.Mutex
	entries []RefusalCount
	index   map[refusalKey]int
	dropped int // attempts at targets beyond MaxRefusals
}

// MaxRefusals is how many distinct refused targets a run keeps.
const MaxRefusals = 100

// RefusalCount is a refused target and how often it was tried.
type RefusalCount struct {
	Refusal
	Count int `json:"count"`
}

type refusalKey struct {
	host string
	port int
	via  string
}

// Add records r and reports whether its target is new.
func (rs *Refusals) Add(r Refusal) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k := refusalKey{r.Host, r.Port, r.Via}
	if i, ok := rs.index[k]; ok {
		rs.entries[i].Count++
		return false
	}
	if len(rs.entries) >= MaxRefusals {
		rs.dropped++
		return false
	}
	if rs.index == nil {
		rs.index = map[refusalKey]int{}
	}
	rs.index[k] = len(rs.entries)
	rs.entries = append(rs.entries, RefusalCount{Refusal: r, Count: 1})
	return true
}

// List returns the refused targets in the order they were first refused,
// and how many attempts at further targets were not kept.
func (rs *Refusals) List() (list []RefusalCount, more int) {
	if rs == nil {
		return nil, 0
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.entries), rs.dropped
}

// Summary is the refusals in a few lines of text for a log or a pull
// request, at most max targets (0: all kept).
func Summary(list []RefusalCount, more, max int) []string {
	var out []string
	for i, r := range list {
		if max > 0 && i == max {
			more += len(list) - max
			break
		}
		line := r.String()
		if r.Count > 1 {
			line += " ×" + strconv.Itoa(r.Count)
		}
		out = append(out, line)
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("… and %d more refused attempts", more))
	}
	return out
}
