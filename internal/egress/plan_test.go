package egress

import (
	"testing"

	"github.com/baton-agent/baton/internal/netpolicy"
)

func TestPlanProxyPort(t *testing.T) {
	t.Parallel()
	a, _ := netpolicy.Parse("127.0.0.1:8080", "api.example.com")
	if got := NewPlan("/s", a).ProxyPort; got != DefaultProxyPort {
		t.Errorf("NewPlan().ProxyPort = %d, want %d", got, DefaultProxyPort)
	}
	b, _ := netpolicy.Parse("127.0.0.1:3128", "localhost:3129")
	if got := NewPlan("/s", b).ProxyPort; got != 3130 {
		t.Errorf("NewPlan() with 3128 and 3129 taken: ProxyPort = %d, want 3130", got)
	}
}
