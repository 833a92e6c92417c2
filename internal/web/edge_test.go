package web_test

import (
	"testing"

	"github.com/baton-agent/baton/internal/edgetest"
)

// The HTTP server is an edge: handlers parse, call a service and render,
// and never open the delivery database or the agent executors, nor reach
// for delivery.Service.Store.
func TestWebIsAnEdge(t *testing.T) {
	t.Parallel()
	edgetest.Check(t)
}
