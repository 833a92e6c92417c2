package delivery_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

const postReviews = "POST /repos/octo/app/pulls/*/reviews"

// atPlanCheckpoint is a GitHub delivery whose plan waits for a person,
// its draft pull request open.
func atPlanCheckpoint(t *testing.T, dialect sqlstore.Dialect) (*harness, *githubtest.Server, *baton.Delivery) {
	t.Helper()
	h, srv, _ := githubSetupOn(t, dialect, agenttest.Turn{Final: planText})
	nd := ghNew(cfg())
	nd.Checkpoints = []baton.Phase{baton.PhasePlan}
	d, _, err := h.svc.Insert(t.Context(), nd, "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddBranch("octo/app", "baton/"+d.ID, strings.Repeat("f", 40))
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "plan/succeeded" || len(srv.PullRequests("octo/app")) != 1 {
		t.Fatalf("after plan: %s (%s), pull requests %+v; want plan/succeeded with a draft", got.String(), got.Error, srv.PullRequests("octo/app"))
	}
	return h, srv, got
}

// noteFiles lists the review note files of delivery id.
func noteFiles(t *testing.T, h *harness, id string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(h.dataDir, "notes", id, "review-*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// 20 rejects with a line note each, decided at once through four
// servers on the plan checkpoint of a GitHub delivery: one wins, and only its review note is
// kept (one row, one file) and posted (one pull request review with its
// line comment), once the reject has committed. Before, every reject
// that got past the first look posted its review to GitHub and kept its
// note before the race was decided.
func TestRacingRejectsPostOneReview(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			h, srv, d := atPlanCheckpoint(t, dialect)
			on := delivery.StateOf(d, "")
			// Four servers on the database, as when several serve one team:
			// each serialises its own decisions on a delivery, so the race is
			// between them.
			svcs := []*delivery.Service{h.svc}
			for range 3 {
				q, err := queue.Open(t.Context(), h.dsn, queue.Config{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(q.Close)
				svcs = append(svcs, &delivery.Service{Queue: q, DataDir: h.dataDir, Forge: h.svc.Forge})
			}
			const n = 20
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					_, errs[i] = svcs[i%len(svcs)].DecideOn(context.Background(), d.ID, delivery.Decision{Action: delivery.ActReject, Actor: fmt.Sprintf("reviewer %d", i),
						Note: "Not like this", On: on, Notes: []baton.LineNote{{Path: "docs/plan.md", Line: 1, Body: fmt.Sprintf("step one, says reviewer %d", i)}}})
				})
			}
			close(start)
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case baton.ErrorCode(err) != baton.Conflict && baton.ErrorCode(err) != baton.Unavailable:
					t.Errorf("a losing reject = %v, want Conflict or Unavailable", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d of %d racing rejects won, want 1", won, n)
			}
			if got := srv.Count(postReviews); got != 0 {
				t.Errorf("%d reviews were posted before the server's job ran, want none", got)
			}
			h.serve()
			got := h.waitFor(d.ID, "the review posted", func(d *baton.Delivery) bool { _, ok := d.Ref(baton.RoleReview, "pr_review"); return ok })
			notes, err := h.svc.Store().ReviewNotes(t.Context(), d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != 1 {
				t.Fatalf("%d review notes kept, want the winner's alone", len(notes))
			}
			if files := noteFiles(t, h, d.ID); len(files) != 1 {
				t.Errorf("note files = %q, want the winner's alone", files)
			}
			pr := srv.PullRequests("octo/app")[0].Number
			reviews := srv.Reviews("octo/app", pr)
			if c := srv.Count(postReviews); c != 1 || len(reviews) != 1 || !strings.Contains(reviews[0].Body, notes[0].Author) {
				t.Fatalf("%d review posts, reviews %+v; want the winner's (%s) once", c, reviews, notes[0].Author)
			}
			comments := srv.ReviewComments("octo/app", pr)
			if len(comments) != 1 || comments[0].Path != "docs/plan.md" || comments[0].Line != 1 || comments[0].ReviewID != reviews[0].ID {
				t.Errorf("line comments = %+v, want the winner's on docs/plan.md:1", comments)
			}
			// The next implement reads the note's file and the line note
			// where GitHub shows it.
			var lines []baton.Ref
			for _, r := range got.Refs {
				if r.Type == baton.RefReviewLine {
					lines = append(lines, r)
				}
			}
			if len(lines) != 1 || lines[0].Label != "docs/plan.md:1" || !strings.Contains(lines[0].URL, "#discussion_r") {
				t.Errorf("line refs = %+v, want docs/plan.md:1 at its GitHub comment", lines)
			}
			if r, ok := got.Ref(baton.RoleReview, "review_note"); !ok || r.URL != notes[0].URL {
				t.Errorf("review note ref = %+v, want the note's file %s", r, notes[0].URL)
			}

			// Posting again (a job retried after its process died between
			// GitHub's answer and recording it) finds the review by its key.
			job := queue.Job{Attempt: 2, MaxAttempts: 8}
			if err := h.svc.PostReview(t.Context(), queue.ReviewArgs{DeliveryID: d.ID, NoteID: notes[0].ID}, job); err != nil {
				t.Fatal(err)
			}
			again, _ := h.svc.Current(t.Context(), d.ID)
			if c := srv.Count(postReviews); c != 1 || len(again.Refs) != len(got.Refs) {
				t.Errorf("a second post made %d review posts and refs %+v, want 1 and %+v", c, again.Refs, got.Refs)
			}
		})
	}
}

// refuseUpdates makes the database refuse every change of a delivery,
// as a commit that fails does.
func refuseUpdates(t *testing.T, h *harness) {
	t.Helper()
	db, err := sqlstore.Open(t.Context(), h.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dialect == sqlstore.Postgres {
		_, err = db.Pool.Exec(t.Context(), `CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ LANGUAGE plpgsql;
			CREATE TRIGGER refuse BEFORE UPDATE ON deliveries FOR EACH ROW EXECUTE FUNCTION refuse();`)
	} else {
		_, err = db.SQL.ExecContext(t.Context(), `CREATE TRIGGER refuse BEFORE UPDATE ON deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END`)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A reject whose transaction fails to commit keeps no note (no row, no
// file), queues no post and sends GitHub nothing.
func TestRejectThatFailsLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			h, srv, d := atPlanCheckpoint(t, dialect)
			refuseUpdates(t, h)
			before := len(srv.Requests())
			_, err := h.svc.DecideOn(t.Context(), d.ID, delivery.Decision{Action: delivery.ActReject, Actor: "alice", Note: "Not like this",
				On: delivery.StateOf(d, ""), Notes: []baton.LineNote{{Path: "docs/plan.md", Line: 1, Body: "no"}}})
			if err == nil {
				t.Fatal("a reject the database refused succeeded")
			}
			notes, _ := h.svc.Store().ReviewNotes(t.Context(), d.ID)
			jobs, _ := h.q.JobCounts(t.Context(), queue.ReviewArgs{}.Kind())
			if len(notes) != 0 || len(noteFiles(t, h, d.ID)) != 0 || len(jobs) != 0 {
				t.Errorf("a failed reject left notes %+v, files %q, review jobs %v; want none", notes, noteFiles(t, h, d.ID), jobs)
			}
			if reqs := srv.Requests()[before:]; len(reqs) != 0 {
				t.Errorf("a failed reject sent GitHub %q, want nothing", reqs)
			}
		})
	}
}

// The note file is what the next agent reads: a process that committed a
// reject and died before writing it leaves it to the next agent phase,
// which writes it before the agent starts.
func TestNextPhaseWritesAMissingNote(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0, agenttest.Turn{Final: planText}, agenttest.Turn{Final: planText})
	d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil {
		t.Fatal(err)
	}
	got, err := h.svc.Reject(t.Context(), d.ID, "alice", "Plan the tests first", delivery.State{})
	if err != nil {
		t.Fatal(err)
	}
	files := noteFiles(t, h, d.ID)
	if len(files) != 1 {
		t.Fatalf("note files after the reject = %q, want one", files)
	}
	if err := os.Remove(files[0]); err != nil { // as if the process had died
		t.Fatal(err)
	}
	if got.String() != "plan/pending" {
		t.Fatalf("after the reject: %s, want plan/pending", got.String())
	}
	if _, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(b), "Plan the tests first") {
		t.Errorf("the note after the next plan = %q, %v; want the reason", b, err)
	}
	runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if last := runs[len(runs)-1]; !strings.Contains(last.Prompt, delivery.FileURL(files[0])) {
		t.Errorf("the next plan's prompt does not point at the note %s:\n%s", files[0], last.Prompt)
	}
}
