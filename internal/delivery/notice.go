package delivery

import (
	"context"
	"encoding/json"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Notice events: a delivery waits for a person, failed, or closed.
const (
	NoticeWaiting = "delivery.waiting"
	NoticeFailed  = "delivery.failed"
	NoticeClosed  = "delivery.closed"
)

// Notice is the news a notification carries (the JSON body of an
// outbound webhook): what happened to which delivery, and why. It holds
// what a person reads about the delivery anyway, never a credential.
type Notice struct {
	Event    string         `json:"event"`
	At       time.Time      `json:"at"`
	Delivery NoticeDelivery `json:"delivery"`
	// Reason is the phase log's note for the change: why it waits, failed
	// or closed (at most 1 KiB).
	Reason string `json:"reason,omitempty"`
}

// NoticeDelivery is the delivery a notice is about.
type NoticeDelivery struct {
	ID         string `json:"id"`
	Seq        int64  `json:"seq"`
	Title      string `json:"title"` // the summary's first line, at most 200 bytes
	Repository string `json:"repository"`
	Phase      string `json:"phase"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"` // at most 1 KiB
	IssueURL   string `json:"issue_url,omitempty"`
	PullURL    string `json:"pull_request_url,omitempty"`
	// URL is the delivery's dashboard page, when the server has a public
	// URL (the notifier adds it).
	URL string `json:"url,omitempty"`
}

// waitsForPerson reports a delivery that moves only when a person acts:
// a checkpoint phase not started, a checkpoint's result to approve, a
// blocked verdict.
func waitsForPerson(d *baton.Delivery) bool {
	switch d.RunStatus {
	case baton.StatusPending:
		return !d.Queued && d.Phase.Runnable()
	case baton.StatusSucceeded:
		return d.Phase != baton.PhaseClose
	case baton.StatusBlocked:
		return true
	}
	return false
}

// noticeOf is the notice a change from before to after makes, if any:
// closed, failed, or waiting for a person (once per state entered).
func noticeOf(before, after *baton.Delivery, log []baton.PhaseLogEntry, at time.Time) (Notice, bool) {
	same := before != nil && before.Phase == after.Phase && before.RunStatus == after.RunStatus
	var event string
	switch {
	case after.Phase == baton.PhaseClose:
		if before != nil && before.Phase == baton.PhaseClose {
			return Notice{}, false
		}
		event = NoticeClosed
	case after.RunStatus == baton.StatusFailed:
		if same {
			return Notice{}, false
		}
		event = NoticeFailed
	case waitsForPerson(after):
		if same && before.Queued == after.Queued {
			return Notice{}, false
		}
		event = NoticeWaiting
	default:
		return Notice{}, false
	}
	n := Notice{Event: event, At: at, Delivery: NoticeDelivery{
		ID: after.ID, Seq: after.Seq, Title: baton.Truncate(after.Title(), 200, "…"), Repository: after.Repository,
		Phase: string(after.Phase), Status: string(after.RunStatus), Error: baton.Truncate(after.Error, 1024, "…"),
	}}
	if r, ok := after.Ref(baton.RoleRequest, "github_issue"); ok {
		n.Delivery.IssueURL = r.URL
	}
	if r, ok := after.Ref(baton.RoleWork, "pr"); ok {
		n.Delivery.PullURL = r.URL
	}
	if len(log) > 0 {
		n.Reason = baton.Truncate(log[len(log)-1].Note, 1024, "…")
	}
	return n, true
}

// queueNotice stores the notice of a change, if it makes one, and queues
// its job in tx: both commit with the change, and a server sends it
// (notify.Notifier).
func queueNotice(ctx context.Context, tx queue.Tx, before, after *baton.Delivery, log []baton.PhaseLogEntry) error {
	at := after.UpdatedAt
	n, ok := noticeOf(before, after, log, at)
	if !ok {
		return nil
	}
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	no := &sqlstore.Notification{DeliveryID: after.ID, Event: n.Event, Body: string(b), CreatedAt: at}
	if err := tx.Store().CreateNotification(ctx, no); err != nil {
		return err
	}
	return tx.Enqueue(ctx, queue.NoticeArgs{ID: no.ID})
}
