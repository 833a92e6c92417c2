package intake_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// A source's draft setting is stored with it and reaches the deliveries
// it makes; a bad one is refused.
func TestSourceDraftSetting(t *testing.T) {
	t.Parallel()
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

// Notification targets are the server's to set: a request cannot, and a
// URL with credentials or another scheme is refused; set ones round-trip
// through the database and never show in the source's JSON.
func TestSourceNotifyTargets(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			e := newEnvOn(t, dialect)
			src := e.addSource()
			n := &baton.Notify{WebhookURL: "https://hooks.example.com/baton", WebhookSecret: "s3cret", SlackURL: "https://hooks.slack.com/services/T/B/x"}
			if _, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{Notify: n}); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "server only") {
				t.Errorf("a request setting targets = %v, want Invalid", err)
			}
			bad := &baton.Notify{WebhookURL: "https://user:pw@hooks.example.com/"}
			if _, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{Notify: bad, AllowNotify: true}); baton.ErrorCode(err) != baton.Invalid {
				t.Errorf("a URL with credentials = %v, want Invalid", err)
			}
			if _, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{Notify: n, AllowNotify: true}); err != nil {
				t.Fatal(err)
			}
			got, err := e.in.Get(t.Context(), src.ID)
			if err != nil || got.Notify != *n {
				t.Fatalf("stored targets = %+v, %v", got.Notify, err)
			}
			b, _ := json.Marshal(got)
			if strings.Contains(string(b), "hooks.") || strings.Contains(string(b), "s3cret") {
				t.Errorf("the source's JSON shows its targets: %s", b)
			}
		})
	}
}
