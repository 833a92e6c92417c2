package netpolicy

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
	// TCP connection: a tunnel through the proxy, or one the box's own
	// kernel refused), "http" (a plain HTTP request through the proxy),
	// "udp" (a datagram the box's kernel refused).
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
	switch r.Via {
	case "dns":
		what = "DNS lookup of " + r.Host
	case "udp":
		what = "UDP to " + r.Target()
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
