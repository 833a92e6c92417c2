package delivery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/safefile"
)

// A review note (a person's reject reason with its line notes, or a
// reviewer agent's verdict) belongs to the decision that makes it: its
// row is written in the decision's transaction (keepReview), and what
// leaves the process happens only once that commits: the note's file
// for the next agent (writeNote, also written by the runner before an
// agent phase and by the review job) and the forge's review, posted by
// the review job (PostReview) queued in the same transaction. A decision
// that loses (a moved state, a busy database) leaves nothing behind; one
// that commits posts its review once, whatever process dies.

// keepReview stores v as a review note of d in tx and queues its post
// to d's forge, and returns the refs the decision adds: the note's file,
// then one per line note. The file is written after the commit
// (writeNote).
func (s *Service) keepReview(ctx context.Context, tx queue.Tx, d *baton.Delivery, v forge.Review) (*baton.ReviewNote, []baton.Ref, error) {
	if len(v.Lines) > 0 {
		v.Feedback = baton.FormatLineNotes(v.Lines)
	}
	n := &baton.ReviewNote{DeliveryID: d.ID, Verdict: v.Verdict, Summary: v.Summary, Feedback: v.Feedback, Author: v.Author, CreatedAt: s.now()}
	if err := tx.Store().CreateReviewNote(ctx, n); err != nil {
		return nil, nil, err
	}
	n.URL = FileURL(s.notePath(d.ID, n.ID))
	if err := tx.Store().SetReviewNoteURL(ctx, n.ID, n.URL); err != nil {
		return nil, nil, err
	}
	if d.Forge != baton.ForgeLocal {
		// The local forge's review is the note itself: nothing to post.
		if err := tx.Enqueue(ctx, queue.ReviewArgs{DeliveryID: d.ID, NoteID: n.ID}); err != nil {
			return nil, nil, err
		}
	}
	label := "review: " + string(v.Verdict)
	if v.Reject {
		label = "rejected by " + v.Author
	}
	refs := append([]baton.Ref{{Role: baton.RoleReview, Type: "review_note", Label: label, URL: n.URL}}, forge.LineRefs(v, n.URL, nil)...)
	return n, refs, nil
}

// notePath is where review note id of delivery deliveryID is kept.
func (s *Service) notePath(deliveryID string, id int64) string {
	return filepath.Join(s.DataDir, "notes", deliveryID, fmt.Sprintf("review-%d.md", id))
}

// noteReview is the review note n publishes: a reviewer agent signs as
// "reviewer agent (…)"; anyone else rejected, with their line notes as
// the feedback.
func noteReview(n *baton.ReviewNote) forge.Review {
	r := forge.Review{Verdict: n.Verdict, Summary: n.Summary, Feedback: n.Feedback, Author: n.Author,
		Reject: !strings.HasPrefix(n.Author, "reviewer agent")}
	if r.Reject && r.Feedback != "" {
		r.Lines, _ = baton.ParseLineNotes(r.Feedback)
	}
	return r
}

// writeNote writes note n's file, where its refs point the next agent,
// unless it is there already: the same text whoever writes it.
func (s *Service) writeNote(n *baton.ReviewNote) error {
	path := s.notePath(n.DeliveryID, n.ID)
	if _, err := os.Lstat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return safefile.WriteAtomic(path, []byte(NoteBody(n)), 0o644)
}

// writeNotes writes the files of d's review notes that are missing: a
// process that committed a note and died before writing its file leaves
// it to the next agent phase, which reads it.
func (s *Service) writeNotes(ctx context.Context, d *baton.Delivery) error {
	notes, err := s.Store().ReviewNotes(ctx, d.ID)
	if err != nil {
		return err
	}
	var errs []error
	for i := range notes {
		errs = append(errs, s.writeNote(&notes[i]))
	}
	return errors.Join(errs...)
}

// PostReview is the queue's review handler: it publishes a stored review
// note on its delivery's forge and adds where it was posted to the
// delivery's refs (beside the note's file, which stands in for it until
// then). The post is idempotent: the review carries the note's key, and
// one already on the forge is taken instead of posting again. A forge
// that refuses it for good, or fails on the last attempt, leaves the
// note as the review and a warning on the delivery.
func (s *Service) PostReview(ctx context.Context, a queue.ReviewArgs, job queue.Job) error {
	st := s.Store()
	d, err := st.FindDeliveryByID(ctx, a.DeliveryID)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil // deleted
	} else if err != nil {
		return err
	}
	notes, err := st.ReviewNotes(ctx, d.ID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(notes, func(n baton.ReviewNote) bool { return n.ID == a.NoteID })
	if i < 0 {
		return nil // deleted with its delivery
	}
	n := &notes[i]
	_ = s.writeNote(n) // for the next agent; its phase writes it too
	v := noteReview(n)
	v.Key = fmt.Sprintf("%s/%d", d.ID, n.ID)
	refs, err := s.postTo(ctx, d, v, n.URL)
	if err != nil {
		if baton.ErrorCode(err) != baton.Invalid && baton.ErrorCode(err) != baton.NotFound && !job.Last() {
			return err // retried
		}
		return s.noteWarning(ctx, d.ID, fmt.Sprintf("⚠ review note %d not posted to the forge, kept as a note: %s", n.ID, errText(err)))
	}
	return s.addReviewRefs(ctx, d.ID, n.URL, refs)
}

// postTo posts v through d's forge.
func (s *Service) postTo(ctx context.Context, d *baton.Delivery, v forge.Review, noteURL string) ([]baton.Ref, error) {
	f, err := s.forge(ctx, d)
	if err != nil {
		return nil, err
	}
	return f.PostReview(ctx, d, v, noteURL)
}

// addReviewRefs adds a posted review's refs to delivery id: its line
// refs replace those that pointed at the note's file (noteURL), whose
// own ref stays for agents that cannot reach the forge. A concurrent
// change is tried again: the refs are the job's to add.
func (s *Service) addReviewRefs(ctx context.Context, id, noteURL string, refs []baton.Ref) error {
	lines := slices.ContainsFunc(refs, func(r baton.Ref) bool { return r.Type == baton.RefReviewLine && r.URL != noteURL })
	var err error
	for range 5 {
		err = s.Queue.InTx(ctx, func(tx queue.Tx) error {
			cur, err := tx.Store().FindDeliveryByID(ctx, id)
			if err != nil {
				return err
			}
			next := *cur
			next.Refs = slices.Clone(cur.Refs)
			next.UpdatedAt = s.now()
			if lines {
				next.Refs = slices.DeleteFunc(next.Refs, func(r baton.Ref) bool { return r.Type == baton.RefReviewLine && r.URL == noteURL })
			}
			for _, r := range refs {
				if r.URL != "" {
					next.AddRef(r)
				}
			}
			return tx.Store().UpdateDelivery(ctx, &next)
		})
		if baton.ErrorCode(err) != baton.Conflict && baton.ErrorCode(err) != baton.Unavailable {
			break
		}
	}
	if err == nil {
		s.notify(id)
	}
	if baton.ErrorCode(err) == baton.NotFound {
		return nil
	}
	return err
}

// noteWarning records a warning on delivery id's event log.
func (s *Service) noteWarning(ctx context.Context, id, text string) error {
	d, err := s.Store().FindDeliveryByID(ctx, id)
	if err != nil {
		return err
	}
	ev := baton.DeliveryEvent{Kind: baton.EventNote, Phase: d.Phase, At: s.now(), Text: text}
	if err := s.Store().AppendEvents(ctx, id, []baton.DeliveryEvent{ev}); err != nil {
		return err
	}
	s.notify(id)
	return nil
}
