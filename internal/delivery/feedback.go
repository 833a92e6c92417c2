package delivery

import (
	"context"

	"github.com/baton-agent/baton"
)

// Feedback applies a person's feedback from GitHub to the delivery with
// id: ref (a review ref to their comment or review, which the next agent
// reads there; its text is never copied into a prompt) is added, and the
// delivery goes back to implement, or to plan when no plan was taken yet
// (FeedbackFits). actor names the person ("github:alice"). A Conflict
// says why it does not apply now: the delivery is running or has a round
// queued (retry later), or it is closed or merged (never).
func (s *Service) Feedback(ctx context.Context, id string, ref baton.Ref, actor string) (*baton.Delivery, error) {
	if err := checkDecision(actor, ref.URL); err != nil {
		return nil, err
	}
	unlock, err := s.lockDecision(ctx, &id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	note := "feedback from " + actor
	if ref.URL != "" {
		note += ": " + ref.URL
	}
	return s.Act(ctx, id, Input{Action: ActFeedback, Actor: actor, Person: true, Note: note, Refs: []baton.Ref{ref}})
}
