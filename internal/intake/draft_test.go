package intake_test

import (
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// A source's draft setting is stored with it and reaches the deliveries
// it makes; a bad one is refused.
func TestSourceDraftSetting(t *testing.T) {
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			e := newEnvOn(t, dialect)
			never := "never"
			src, err := e.in.Add(t.Context(), intake.SourceInput{Repo: "octo/app", Draft: &never})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := e.in.Get(t.Context(), src.ID); err != nil || got.Draft != baton.DraftNever {
				t.Fatalf("stored source draft = %q, %v; want never", got.Draft, err)
			}
			e.addIssues(1, "baton")
			if _, err := e.sync(src); err != nil {
				t.Fatal(err)
			}
			ds, err := e.svc.List(t.Context(), baton.DeliveryFilter{})
			if err != nil || len(ds) != 1 || ds[0].Config.Draft != baton.DraftNever {
				t.Fatalf("deliveries = %+v, %v; want one with draft never", ds, err)
			}
			bad := "sometimes"
			if _, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{Draft: &bad}); baton.ErrorCode(err) != baton.Invalid {
				t.Errorf("draft %q = %v, want Invalid", bad, err)
			}
		})
	}
}
