package sqlstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// A set-up's record comes back as it was stored, numbered within its
// delivery, on both databases; its output is what the repository's
// commands printed, so it holds anything, a NUL byte too, and the record
// must not be lost for it.
func TestSetupRunsRoundTrip(t *testing.T) {
	t.Parallel()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			d := newDelivery("aaaaaaaaaaaa")
			if _, _, err := s.CreateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
			failed := &baton.SetupRun{DeliveryID: d.ID, Phase: baton.PhasePlan, Attempt: 1, Status: baton.SetupFailed,
				Commands: []string{"npm ci", "make gen"}, Ran: 2, ExitCode: 7, Output: "fetching\x00\x00 binary\nregistry unreachable\n",
				Log: "run-1/setup.log", Note: "`make gen` exited 7 after 1s", StartedAt: t0, EndedAt: t0.Add(time.Second)}
			skipped := &baton.SetupRun{DeliveryID: d.ID, Phase: baton.PhaseImplement, Attempt: 2, Status: baton.SetupSkipped,
				Commands: []string{"npm ci"}, StartedAt: t0.Add(time.Minute), EndedAt: t0.Add(time.Minute)}
			for _, r := range []*baton.SetupRun{failed, skipped} {
				if err := s.CreateSetupRun(ctx, r); err != nil {
					t.Fatalf("CreateSetupRun(%s) = %v", r.Status, err)
				}
			}
			if failed.N != 1 || skipped.N != 2 || failed.ID == 0 || skipped.ID == failed.ID {
				t.Errorf("numbered %d/%d, ids %d/%d; want 1, 2 and two ids", failed.N, skipped.N, failed.ID, skipped.ID)
			}
			got, err := s.SetupRuns(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := []baton.SetupRun{*failed, *skipped}
			// A NUL cannot be kept as text; it reads back as U+FFFD.
			want[0].Output = strings.ReplaceAll(want[0].Output, "\x00", "\uFFFD")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("set-up runs (-want +got):\n%s", diff)
			}
		})
	}
}
