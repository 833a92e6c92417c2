package web

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/markdown"
)

// A plan renders once per text; a view does not wait past its bound for
// a rendering (here held back by taking the one rendering slot), and the
// views after it get the rendering; a plan markdown refuses is shown as
// text, saying why; the cache keeps the latest plansKept.
func TestPlanCache(t *testing.T) {
	t.Parallel()
	var c planCache
	c.slot.Lock()
	if html, why := c.render("# Plan", 0); html != "" || why != "Shown as text, not rendered: rendering it takes over a second." {
		t.Errorf("render while the slot is taken = %q, %q", html, why)
	}
	c.slot.Unlock()
	if html, why := c.render("# Plan", time.Minute); html != `<h3 data-line="1">Plan</h3>` || why != "" {
		t.Errorf("render once the slot is free = %q, %q", html, why)
	}
	big := strings.Repeat("a", markdown.MaxSource+1)
	if html, why := c.render(big, time.Minute); html != "" || why != "Shown as text, not rendered: it is over 64 KiB." {
		t.Errorf("render(a plan over MaxSource) = %q, %q", html, why)
	}
	if len(c.plans) != 2 {
		t.Errorf("the cache holds %d plans after two, want 2", len(c.plans))
	}
	for i := range plansKept {
		c.render(fmt.Sprint(i), time.Minute)
	}
	if len(c.plans) != plansKept || len(c.order) != plansKept {
		t.Errorf("the cache holds %d plans (%d in order), want %d", len(c.plans), len(c.order), plansKept)
	}
	if _, ok := c.plans[c.order[0]]; !ok || c.order[0] != sha256.Sum256([]byte("0")) {
		t.Error("the oldest plan kept is not the first of the last plansKept")
	}
}

// A plan dropped from the cache before its turn to render is not
// rendered: the one rendering slot goes to plans still kept, so a burst
// of views behind a slow plan queues at most plansKept renderings, and
// a view still waiting on the dropped one is told why it is text.
func TestPlanCacheSkipsDroppedPlans(t *testing.T) {
	t.Parallel()
	var c planCache
	c.slot.Lock()
	c.render("# Dropped", 0)
	dropped := c.plans[sha256.Sum256([]byte("# Dropped"))]
	for i := range plansKept {
		c.render(fmt.Sprint(i), 0)
	}
	c.slot.Unlock()
	<-dropped.done
	if dropped.html != "" || dropped.err != errPlanDropped {
		t.Errorf("a plan dropped before its turn rendered as %q, %v", dropped.html, dropped.err)
	}
	if html, why := c.render("0", time.Minute); html != `<p data-line="1">0</p>` || why != "" {
		t.Errorf("a plan still kept = %q, %q", html, why)
	}
}
