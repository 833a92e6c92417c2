package web

import (
	"crypto/sha256"
	"errors"
	"html/template"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/markdown"
)

// A plan is rendered as markdown once per text, not on every view and
// live refresh: goldmark's parse of a hostile plan can take seconds even
// within markdown.MaxSource. One plan renders at a time, and a view
// waits for it at most planWait, then shows the plan's text (its
// numbered source); the rendering finishes for the views after.
const (
	planWait  = time.Second
	plansKept = 32
)

// planCache holds the plans rendered lately, by their text's hash. Its
// zero value is ready to use.
type planCache struct {
	mu    sync.Mutex
	plans map[[32]byte]*renderedPlan
	order [][32]byte // oldest first
	slot  sync.Mutex // one rendering at a time
}

// errPlanDropped is why a plan is not rendered when newer ones pushed
// it out of the cache while it waited for its turn.
var errPlanDropped = errors.New("too many plans were waiting to be rendered")

type renderedPlan struct {
	done chan struct{} // closed when html and err are set
	html template.HTML
	err  error
}

// render returns plan as HTML, or "" and why the page shows it as text.
func (c *planCache) render(plan string, wait time.Duration) (template.HTML, string) {
	key := sha256.Sum256([]byte(plan))
	c.mu.Lock()
	p, ok := c.plans[key]
	if !ok {
		if c.plans == nil {
			c.plans = map[[32]byte]*renderedPlan{}
		}
		if len(c.order) == plansKept {
			delete(c.plans, c.order[0])
			c.order = c.order[1:]
		}
		p = &renderedPlan{done: make(chan struct{})}
		c.plans[key] = p
		c.order = append(c.order, key)
		go func() {
			c.slot.Lock()
			defer c.slot.Unlock()
			c.mu.Lock()
			kept := c.plans[key] == p
			c.mu.Unlock()
			if kept {
				p.html, p.err = markdown.Render(plan)
			} else {
				p.err = errPlanDropped // no view asks for it again: do not spend the slot
			}
			close(p.done)
		}()
	}
	c.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		return "", "Shown as text, not rendered: rendering it takes over a second."
	}
	if p.err != nil {
		return "", "Shown as text, not rendered: " + p.err.Error() + "."
	}
	return p.html, ""
}
