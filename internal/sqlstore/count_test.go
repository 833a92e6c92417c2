package sqlstore_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Pages of a list both ways, their totals, and counts by state: what a
// dashboard of many deliveries shows without reading them all.
func TestPagesAndCounts(t *testing.T) {
	t.Parallel()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			for i := range 12 {
				d := newDelivery(fmt.Sprintf("%012d", i))
				if i%3 == 0 {
					d.Phase, d.RunStatus, d.Queued = baton.PhaseClose, baton.StatusSucceeded, false
				}
				if i%3 == 1 {
					d.Queued = false // a checkpoint waiting for a person
				}
				d.UpdatedAt = t0.Add(time.Duration(i) * time.Minute)
				if _, _, err := s.CreateDelivery(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			seqs := func(f baton.DeliveryFilter) []int64 {
				ds, err := s.FindDeliveries(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				var out []int64
				for _, d := range ds {
					out = append(out, d.Seq)
				}
				return out
			}
			if got := seqs(baton.DeliveryFilter{BeforeSeq: 9, Limit: 3}); !slices.Equal(got, []int64{8, 7, 6}) {
				t.Errorf("before 9 = %v", got)
			}
			if got := seqs(baton.DeliveryFilter{AfterSeq: 5, Limit: 3}); !slices.Equal(got, []int64{8, 7, 6}) {
				t.Errorf("after 5, newest first = %v, want 8 7 6", got)
			}
			if got := seqs(baton.DeliveryFilter{AfterSeq: 10, Limit: 3}); !slices.Equal(got, []int64{12, 11}) {
				t.Errorf("after 10 = %v", got)
			}
			for _, c := range []struct {
				f    baton.DeliveryFilter
				want int64
			}{
				{baton.DeliveryFilter{}, 12},
				{baton.DeliveryFilter{Open: true, Limit: 2}, 8},
				{baton.DeliveryFilter{Closed: true}, 4},
				{baton.DeliveryFilter{AfterSeq: 9}, 3},
				{baton.DeliveryFilter{Open: true, BeforeSeq: 4}, 2},
			} {
				if n, err := s.CountMatching(ctx, c.f); err != nil || n != c.want {
					t.Errorf("CountMatching(%+v) = %d, %v; want %d", c.f, n, err, c.want)
				}
			}
			counts, err := s.CountStates(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[sqlstore.StateCount]int64{
				{Phase: baton.PhaseClose, Status: baton.StatusSucceeded}:             4,
				{Phase: baton.PhasePlan, Status: baton.StatusPending, Queued: false}: 4,
				{Phase: baton.PhasePlan, Status: baton.StatusPending, Queued: true}:  4,
			}
			if !maps.Equal(counts, want) {
				t.Errorf("CountStates = %v, want %v", counts, want)
			}
			last, err := s.LastUpdated(ctx)
			if err != nil || !last.Equal(t0.Add(11*time.Minute)) {
				t.Errorf("LastUpdated = %v, %v", last, err)
			}
		})
	}
}
