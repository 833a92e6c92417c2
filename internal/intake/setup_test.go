package intake_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// A source's set-up is its deliveries' set-up: stored with the source
// (both databases), given to each delivery it makes, changed for the
// deliveries made after, and set by the server's owner only.
func TestSourceSetupIsItsDeliveries(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			e := newEnvOn(t, dialect)
			su := baton.SourceSetup{Commands: []string{"npm ci"}, Files: []string{"package-lock.json"}, EgressAllow: []string{"registry.npmjs.org"}}
			// The API never sets it.
			if _, err := e.in.Add(t.Context(), intake.SourceInput{Repo: "octo/app", Setup: &su}); baton.ErrorCode(err) != baton.Invalid ||
				!strings.Contains(baton.ErrorMessage(err), "set on the server only") {
				t.Fatalf("Add with a set-up, not allowed = %v", err)
			}
			for _, bad := range []baton.SourceSetup{
				{Commands: []string{" "}},
				{Commands: []string{"npm ci"}, Files: []string{"../etc/passwd"}},
				{Commands: []string{"npm ci"}, EgressAllow: []string{"http://user:pw@x"}},
				{Files: []string{"package-lock.json"}},
				{EgressAllow: []string{"registry.npmjs.org"}},
			} {
				if _, err := e.in.Add(t.Context(), intake.SourceInput{Repo: "octo/app", Setup: &bad, AllowSetup: true}); baton.ErrorCode(err) != baton.Invalid {
					t.Errorf("Add with the set-up %+v = %v, want Invalid", bad, err)
				}
			}
			src, err := e.in.Add(t.Context(), intake.SourceInput{Repo: "octo/app", Setup: &su, AllowSetup: true})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := e.in.Get(t.Context(), src.ID); err != nil || !slices.Equal(got.Setup.Commands, su.Commands) ||
				!slices.Equal(got.Setup.Files, su.Files) || !slices.Equal(got.Setup.EgressAllow, su.EgressAllow) {
				t.Fatalf("stored source = %+v, %v", got, err)
			}
			e.addIssues(1, "baton")
			if _, err := e.sync(src); err != nil {
				t.Fatal(err)
			}
			// Changed, it reaches the deliveries made after.
			later := baton.SourceSetup{Commands: []string{"go mod download"}}
			if _, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{Setup: &later, AllowSetup: true}); err != nil {
				t.Fatal(err)
			}
			e.addIssues(1, "baton")
			if _, err := e.sync(src); err != nil {
				t.Fatal(err)
			}
			ds, err := e.svc.List(t.Context(), baton.DeliveryFilter{})
			if err != nil || len(ds) != 2 {
				t.Fatalf("deliveries = %d, %v", len(ds), err)
			}
			byIssue := map[string]baton.DeliveryConfig{}
			for _, d := range ds {
				byIssue[d.Refs[0].Label] = d.Config
			}
			if c := byIssue["octo/app#1"]; !slices.Equal(c.Setup, su.Commands) || !slices.Equal(c.SetupFiles, su.Files) || !slices.Equal(c.SetupEgressAllow, su.EgressAllow) {
				t.Errorf("the first delivery's set-up = %q %q %q", c.Setup, c.SetupFiles, c.SetupEgressAllow)
			}
			if c := byIssue["octo/app#2"]; !slices.Equal(c.Setup, later.Commands) || len(c.SetupFiles) != 0 {
				t.Errorf("the second delivery's set-up = %q %q", c.Setup, c.SetupFiles)
			}
			// A delivery of the repository's issue made by hand (the CLI,
			// the API, MCP) runs the source's set-up too; one that names
			// its own runs that.
			byHand, _, err := e.svc.Create(t.Context(), delivery.Request{IssueURL: "https://github.com/octo/app/issues/9", Summary: "by hand"})
			if err != nil || !slices.Equal(byHand.Config.Setup, later.Commands) {
				t.Errorf("a delivery made by hand of the source's issue: set-up %q, %v", byHand.Config.Setup, err)
			}
			own := []string{"make deps"}
			named, _, err := e.svc.Create(t.Context(), delivery.Request{IssueURL: "https://github.com/octo/app/issues/10", Summary: "its own",
				Settings: delivery.Settings{Setup: &own}})
			if err != nil || !slices.Equal(named.Config.Setup, own) {
				t.Errorf("a delivery naming its set-up: %q, %v", named.Config.Setup, err)
			}
			// Removed, the source names none.
			if got, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{Setup: &baton.SourceSetup{}, AllowSetup: true}); err != nil || !got.Setup.IsZero() {
				t.Errorf("source without its set-up = %+v, %v", got, err)
			}
		})
	}
}
