package delivery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/safefile"
)

// Say gives a person's message to the agent running the delivery named
// ref, at its next safe point: the runner stops the agent's run and
// resumes its session with the message (agentrun.Spec.Resume), so
// nothing the agent did is lost. The message is stored in the
// transaction that queues its job, recorded in the event log (who, when,
// what), and becomes a ref the next phases see. It is refused (Conflict)
// when no agent phase is running or queued: a reject's note is the word
// for a phase that waits.
func (s *Service) Say(ctx context.Context, ref, actor, text string) (*baton.Message, error) {
	text = strings.TrimSpace(text)
	if err := baton.CheckMessage(text); err != nil {
		return nil, err
	}
	if err := baton.CheckSize("the actor's name", actor, baton.MaxName); err != nil {
		return nil, err
	}
	if strings.TrimSpace(actor) == "" {
		return nil, baton.Errorf(baton.Invalid, "a message needs who says it")
	}
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var m *baton.Message
	err = s.Queue.InTx(ctx, func(tx queue.Tx) error {
		cur, err := tx.Store().FindDeliveryByID(ctx, d.ID)
		if err != nil {
			return err
		}
		if !Listens(cur) {
			return baton.Errorf(baton.Conflict, "delivery %s is %s: no agent is running or queued to hear a message; %s", cur.ID, cur.String(), sayInstead(cur))
		}
		m = &baton.Message{DeliveryID: cur.ID, Phase: cur.Phase, Attempt: cur.Attempt, Actor: actor, Text: text, CreatedAt: now}
		if err := tx.Store().CreateMessage(ctx, m); err != nil {
			return err
		}
		next := *cur
		next.Refs = append([]baton.Ref(nil), cur.Refs...)
		next.AddRef(s.messageRef(cur, m))
		next.UpdatedAt = now
		if err := tx.Store().UpdateDelivery(ctx, &next); err != nil {
			return err
		}
		ev := baton.DeliveryEvent{Kind: baton.EventNote, Phase: cur.Phase, At: now, Text: "✉ " + actor + " says: " + baton.Truncate(text, 2000, "…")}
		if err := tx.Store().AppendEvents(ctx, cur.ID, []baton.DeliveryEvent{ev}); err != nil {
			return err
		}
		return tx.Enqueue(ctx, queue.MessageArgs{ID: m.ID})
	})
	if err != nil {
		return nil, err
	}
	s.notify(d.ID)
	return m, nil
}

// Listens reports whether d has an agent to give a message to: an agent
// phase running, or queued (its run starts with the message among its
// refs).
func Listens(d *baton.Delivery) bool {
	if d.Phase.Executor() != baton.ExecutorAgent {
		return false
	}
	return d.RunStatus == baton.StatusRunning || d.RunStatus == baton.StatusPending && d.Queued
}

// sayInstead says what a person can do instead of a message.
func sayInstead(d *baton.Delivery) string {
	switch {
	case d.Phase == baton.PhaseClose:
		return "it is closed"
	case d.WaitsForPerson():
		return fmt.Sprintf("it waits for a person: `baton delivery reject %s \"...\"` sends your word to the next run", d.ID)
	}
	return "send it when an agent phase (plan, implement, review) runs"
}

// messageRef is the ref a message becomes: a file in the delivery's
// notes, which agents may read, holding who said what, when.
func (s *Service) messageRef(d *baton.Delivery, m *baton.Message) baton.Ref {
	r := baton.Ref{Role: baton.RoleReview, Type: "message", Label: "message from " + baton.Truncate(m.Actor, 60, "…")}
	path := filepath.Join(s.notesDir(d), fmt.Sprintf("message-%d.md", m.ID))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		if err := safefile.WriteAtomic(path, []byte(messageText(m)), 0o644); err == nil {
			r.URL = FileURL(path)
		}
	}
	return r
}

// messageText is a message as the agent is given it.
func messageText(m *baton.Message) string {
	return fmt.Sprintf("A person watching your work (%s, at %s) says:\n\n%s\n", m.Actor, m.CreatedAt.UTC().Format(time.RFC3339), m.Text)
}

// messagesPrompt is what a resumed run is told: the messages, in order,
// and to carry on.
func messagesPrompt(ms []baton.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(messageText(&m))
		b.WriteString("\n")
	}
	b.WriteString("Take this into account and carry on with your task from where you stopped; your earlier work is all still there.")
	return b.String()
}

// messageRetry is how soon a message's job looks again while the run it
// was sent to is still going.
const messageRetry = 15 * time.Second

// WorkMessage is the queue's message handler: it records what became of
// a message whose run ended without taking it (the runner gives messages
// to the agent itself, and marks them). While the run goes on it looks
// again later.
func (w *Worker) WorkMessage(ctx context.Context, a queue.MessageArgs, job queue.Job) error {
	st := w.Runner.Service.Store()
	m, err := st.FindMessage(ctx, a.ID)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil // its delivery was deleted
	} else if err != nil {
		return err
	}
	if !m.DeliveredAt.IsZero() {
		return nil
	}
	d, err := st.FindDeliveryByID(ctx, m.DeliveryID)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil
	} else if err != nil {
		return err
	}
	if d.RunStatus == baton.StatusRunning && d.Phase == m.Phase && d.Attempt == m.Attempt ||
		d.RunStatus == baton.StatusPending && d.Queued && d.Phase == m.Phase && d.Attempt == m.Attempt {
		// Its run goes on (or has not begun): its runner gives it.
		return &queue.SnoozeError{Until: time.Now().Add(messageRetry), Err: errors.New("the run it was sent to goes on")}
	}
	outcome := "its run ended before it could be given; the next phases see it as a ref"
	if d.Attempt > m.Attempt {
		outcome = fmt.Sprintf("given with the prompt of %s attempt %d, as a ref", d.Phase, d.Attempt)
	}
	_, err = st.DeliverMessage(ctx, m.ID, outcome, w.Runner.Service.now())
	return err
}
