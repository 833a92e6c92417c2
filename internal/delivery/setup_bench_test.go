package delivery_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/goproxytest"
)

// BenchmarkSetup measures a delivery's set-up (`go mod download` of a
// dependency of 400 files, 1.6 MB, from a module proxy on 127.0.0.1) in
// its plan phase, confined: cold, each delivery in a data directory of
// its own (an empty set-up cache: the set-up downloads and extracts the
// module), and warm, each delivery a further one of the same repository
// (the repository's set-up cache has it). setup-ms/op is the set-up's
// own time, from its log; ns/op is the whole plan phase, with a stand-in
// agent.
//
//	go test ./internal/delivery -run XXX -bench Setup -benchtime 10x
func BenchmarkSetup(b *testing.B) {
	proxy := goproxytest.New(b, goproxytest.Dependency("example.test/dep", 400, 4096))
	src := goRepo(b, proxy)
	start := func() *harness {
		h := newHarness(b, 0)
		boxed(b, h)
		h.fake.SetScript(b, agenttest.Script{RepeatLast: true, Turns: []agenttest.Turn{{Final: planText}}})
		h.svc.AgentEnv = append(h.svc.AgentEnv, goEnv(proxy)...)
		return h
	}
	c := cfg()
	c.Setup = []string{"go mod download"}
	c.SetupEgressAllow = []string{proxy.Host}
	n := 0
	plan := func(h *harness) time.Duration {
		n++
		d := newDelivery(src, c)
		d.Summary = fmt.Sprintf("delivery %d", n)
		d.ID = baton.DeliveryID(src, d.Summary)
		got, _, err := h.svc.Insert(b.Context(), d, "alice")
		if err != nil {
			b.Fatal(err)
		}
		got, err = h.runner.Run(b.Context(), got.ID, baton.PhasePlan, "")
		if err != nil || got.RunStatus == baton.StatusFailed {
			b.Fatalf("plan = %v %v (%s)", got, err, got.Error)
		}
		return setupTime(b, h, got.ID)
	}
	b.Run("cold", func(b *testing.B) {
		var took time.Duration
		for b.Loop() {
			b.StopTimer()
			h := start()
			b.StartTimer()
			took += plan(h)
		}
		b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "setup-ms/op")
	})
	b.Run("warm", func(b *testing.B) {
		h := start()
		plan(h) // fills the repository's set-up cache
		var took time.Duration
		for b.Loop() {
			took += plan(h)
		}
		b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "setup-ms/op")
	})
}

var setupTook = regexp.MustCompile(`\[exit 0; ([0-9.]+[mµn]?s);`)

// setupTime is how long id's set-up took, as its setup.log says.
func setupTime(b *testing.B, h *harness, id string) time.Duration {
	logs, _ := filepath.Glob(filepath.Join(h.dataDir, "runs", id, "*", "setup.log"))
	if len(logs) != 1 {
		b.Fatalf("setup logs %q", logs)
	}
	log, err := os.ReadFile(logs[0])
	if err != nil {
		b.Fatal(err)
	}
	m := setupTook.FindSubmatch(log)
	if m == nil {
		b.Fatalf("setup.log says no time: %s", log)
	}
	d, err := time.ParseDuration(string(m[1]))
	if err != nil {
		b.Fatal(err)
	}
	return d
}
