package delivery

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
)

// What a person approves: the plan at the plan checkpoint, the change at
// review and deploy. Both are read from the repository cache on this
// server (forge.Workspaces: read-only git on its refs), so they are what
// the phases committed, not what an agent says it did.

// MaxPlanText bounds the plan shown; the work branch has it whole.
const MaxPlanText = 256 << 10

// Work is what a delivery's work branch holds for a person to judge.
type Work struct {
	// Plan is docs/plan.md on the work branch ("" when there is none);
	// PlanCut says it was longer than MaxPlanText.
	Plan    string
	PlanCut bool
	// PlanNotMerged says the merge leaves the plan out (forge.NotMerged):
	// it is shown apart from the change, as working context.
	PlanNotMerged bool
	// Diff is the change the merge lands (forge.WorkDiff: the work
	// branch against its base, less what the merge leaves out), from the
	// implement phase on (nil before, or when it cannot be read).
	Diff *forge.Diff
	// Missing says why the plan or the diff is not shown, when one is
	// expected and absent.
	Missing string
	// Commit is the work branch's head the plan and the diff were read
	// from ("" when there is none): what a decision on them names
	// (State.Commit).
	Commit string
}

// Work reads what the work branch of the delivery named ref holds: its
// plan, and from implement on its diff against the base, bounded by
// lim. A delivery with no work on this server has an empty Work saying
// why; only a delivery that does not exist is an error.
func (s *Service) Work(ctx context.Context, ref string, lim forge.DiffLimits) (*Work, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	ws := s.Workspaces()
	w := &Work{PlanNotMerged: slices.Contains(forge.NotMerged(d), forge.PlanPath)}
	if workDone(d) {
		// Deployed or closed: the cache's branch is released, the change
		// is where it landed (the refs say where).
		return w, nil
	}
	if w.Commit, err = ws.WorkCommit(d); err != nil {
		w.Missing = baton.ErrorMessage(err)
		return w, nil
	}
	plan, cut, err := ws.WorkFile(ctx, d, forge.PlanPath, MaxPlanText)
	switch {
	case err == nil:
		w.Plan, w.PlanCut = strings.TrimSpace(plan), cut
	case d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded:
		w.Missing = baton.ErrorMessage(err) // a plan to approve, and nothing to show
	}
	if !showsDiff(d) {
		return w, nil
	}
	diff, err := ws.WorkDiff(ctx, d, lim)
	if err != nil {
		w.Missing = baton.ErrorMessage(err)
		return w, nil
	}
	w.Diff, w.Commit = diff, diff.WorkSHA
	return w, nil
}

// showsDiff: the change exists from the implement phase on.
func showsDiff(d *baton.Delivery) bool {
	switch d.Phase {
	case baton.PhaseIntake, baton.PhasePlan:
		return false
	case baton.PhaseImplement:
		return d.RunStatus != baton.StatusPending || d.Attempt > 0 || d.Rounds > 0
	}
	return true
}

// ReviewNote returns review note id of the delivery named ref: a
// reviewer's verdict or a person's reject reason, as baton kept it.
// Notes of other deliveries are NotFound.
func (s *Service) ReviewNote(ctx context.Context, ref string, id int64) (*baton.ReviewNote, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	notes, err := s.Store().ReviewNotes(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	for i := range notes {
		if notes[i].ID == id {
			return &notes[i], nil
		}
	}
	return nil, baton.Errorf(baton.NotFound, "delivery %s has no review note %d", d.ID, id)
}

// NoteBody is a review note as the forge posts it (markdown).
func NoteBody(n *baton.ReviewNote) string { return noteReview(n).Body() }

// noteID is the number of the review note a ref of delivery id points
// at, from the file the note was kept in (notes/<id>/review-<n>.md under
// the data directory); 0 when the ref is not such a note.
func noteID(id string, r baton.Ref) int64 {
	if r.Type != "review_note" || !strings.HasPrefix(r.URL, "file://") {
		return 0
	}
	dir, file := path.Split(strings.TrimPrefix(r.URL, "file://"))
	if !strings.HasSuffix(dir, "/notes/"+id+"/") {
		return 0
	}
	var n int64
	if _, err := fmt.Sscanf(file, "review-%d.md", &n); err != nil || "review-"+strconv.FormatInt(n, 10)+".md" != file || n <= 0 {
		return 0
	}
	return n
}
