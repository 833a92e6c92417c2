package intake_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// send sends a signed webhook (an issues event unless req names one) and,
// when it was queued, handles it as its job does.
func (e *env) send(req intake.WebhookRequest) (intake.WebhookResult, error) {
	e.t.Helper()
	req.Signature = intake.Sign("whsec", req.Body)
	if req.Event == "" {
		req.Event = "issues"
	}
	res, err := e.in.Webhook(e.t.Context(), req)
	if err != nil || res.Outcome != "queued" {
		return res, err
	}
	return e.in.HandleWebhook(e.t.Context(), queue.WebhookArgs{ID: res.ID}, firstAttempt)
}

// GitHub's request is answered once the webhook is verified and recorded
// with its job: nothing is handled, and GitHub is asked nothing, before
// the job runs. The job handles it once, and keeps what it did.
func TestWebhookAnswersBeforeItIsHandled(t *testing.T) {
	t.Parallel()
	e, d, _ := feedbackEnv(t, sqlstore.SQLite)
	e.gh.ResetRequests()
	ctx := t.Context()
	issue := intake.WebhookRequest{Event: "issues", Delivery: "d-issue", Body: labeled(7, "https://github.com/octo/app/issues/7")}
	comment := intake.WebhookRequest{Event: "issue_comment", Delivery: "d-comment", Body: []byte(commentEvent("created", "alice", "@baton also greet bots", 1, false))}
	var ids []string
	for _, req := range []intake.WebhookRequest{issue, comment} {
		req.Signature = intake.Sign("whsec", req.Body)
		res, err := e.in.Webhook(ctx, req)
		if err != nil || res.Outcome != "queued" {
			t.Fatalf("%s webhook answered %+v, %v; want queued", req.Event, res, err)
		}
		ids = append(ids, res.ID)
	}
	if _, total := e.deliveries(); total != 1 {
		t.Errorf("%d deliveries before the jobs ran, want the fixture's only", total)
	}
	if reqs := e.gh.RequestLog(); len(reqs) != 0 {
		t.Errorf("answering the webhooks asked GitHub %v", reqs)
	}
	for i, want := range []string{"created", "queued"} {
		res, err := e.in.HandleWebhook(ctx, queue.WebhookArgs{ID: ids[i]}, firstAttempt)
		if err != nil || res.Outcome != want {
			t.Errorf("job of %s = %+v, %v; want %s", ids[i], res, err, want)
		}
		w, err := e.svc.Store().FindWebhook(ctx, ids[i])
		if err != nil || w.Outcome != want || w.Payload != "" {
			t.Errorf("recorded %s = %+v, %v; want %s without its payload", ids[i], w, err, want)
		}
		if again, _ := e.in.HandleWebhook(ctx, queue.WebhookArgs{ID: ids[i]}, firstAttempt); again.Outcome != "duplicate" {
			t.Errorf("the job of %s run again = %+v, want duplicate", ids[i], again)
		}
	}
	if fr := e.workFeedback(); len(fr) != 1 || fr[0].Outcome != sqlstore.FeedbackApplied || fr[0].DeliveryID != d.ID {
		t.Errorf("the comment's feedback = %+v, want applied to %s", fr, d.ID)
	}
}

// labeled is a signed-looking issues event for the source octo/app whose
// issue is at issueURL.
func labeled(n int, issueURL string) []byte {
	return fmt.Appendf(nil, `{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"octo/app","html_url":"https://github.com/octo/app"},`+
		`"issue":{"number":%d,"title":"Issue %d","state":"open","html_url":%q,"labels":[{"name":"baton"}],"updated_at":"%d"}}`, n, n, issueURL, eventSeq.Add(1))
}

// A webhook signed with octo/app's secret speaks for octo/app only: an
// issue of another repository or host, or a number its URL does not
// name, makes no delivery. Another spelling of octo/app's own issue does.
func TestWebhookRefusesIssuesOfOtherRepositories(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addSource()
	for _, tc := range []struct {
		url     string
		foreign bool // else not an issue URL at all
	}{
		{"https://github.com/victim/private-repo/issues/7", true},
		{"https://ghe.victim.example/octo/app/issues/7", true},
		{"https://github.com/octo/app-private/issues/7", true},
		{"https://github.com/octo/app/issues/8", true},
		{"https://github.com/octo/app/issues/7/../../../../victim/private-repo/issues/7", false},
		{"", false},
	} {
		res, err := e.send(intake.WebhookRequest{Body: labeled(7, tc.url)})
		if baton.ErrorCode(err) != baton.Invalid || errors.Is(err, intake.ErrForeignIssue) != tc.foreign {
			t.Errorf("issue %q: %+v, %v; want Invalid (ErrForeignIssue: %v)", tc.url, res, err, tc.foreign)
		}
	}
	if _, total := e.deliveries(); total != 0 {
		t.Fatalf("%d deliveries from issues outside the source", total)
	}
	res, err := e.send(intake.WebhookRequest{Body: labeled(7, "http://GitHub.com/OCTO/App/issues/7#x")})
	if err != nil || res.Outcome != "created" {
		t.Fatalf("the source's own issue, spelled otherwise: %+v, %v", res, err)
	}
	d, err := e.svc.Current(t.Context(), res.DeliveryID)
	if err != nil || d.Refs[0].URL != "https://github.com/octo/app/issues/7" {
		t.Errorf("the delivery's issue is %v, %v; want the canonical URL", d.Refs, err)
	}
}

// A delivery is acted on once: the same X-GitHub-Delivery, or the same
// signed body under a new id, is "duplicate" for a day, also to a new
// service on the same database (another server, or after a restart).
// A delivery refused as it arrives is not remembered, so GitHub can send
// it again.
func TestWebhookReplaysAreHandledOnce(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { webhookReplaysAreHandledOnce(t, newEnvOn(t, dialect)) })
	}
}

func webhookReplaysAreHandledOnce(t *testing.T, e *env) {
	e.addSource()
	body := labeled(7, "https://github.com/octo/app/issues/7")
	res, err := e.send(intake.WebhookRequest{Delivery: "guid-1", Body: body})
	if err != nil || res.Outcome != "created" {
		t.Fatalf("first delivery: %+v, %v", res, err)
	}
	other := intake.Service{Deliveries: e.svc, WebhookSecret: "whsec", Now: e.in.Now}
	for name, req := range map[string]intake.WebhookRequest{
		"same id and body":       {Delivery: "guid-1", Body: body},
		"same body, another id":  {Delivery: "guid-2", Body: body},
		"same body, no id":       {Body: body},
		"same id, another event": {Delivery: "guid-1", Body: labeled(8, "https://github.com/octo/app/issues/8")},
	} {
		req.Event, req.Signature = "issues", intake.Sign("whsec", req.Body)
		for _, in := range []*intake.Service{e.in, &other} {
			res, err := in.Webhook(t.Context(), req)
			if err != nil || res.Outcome != "duplicate" || !strings.Contains(res.Reason, "already handled") {
				t.Errorf("%s: %+v, %v; want duplicate, already handled", name, res, err)
			}
		}
	}
	if _, total := e.deliveries(); total != 1 {
		t.Errorf("%d deliveries, want 1", total)
	}

	// A failure is forgotten: the redelivery is handled, and fails again.
	bad := []byte(`{"action":"labeled","repository":{"full_name":"octo/app"},"issue":null}`)
	for range 2 {
		if _, err := e.send(intake.WebhookRequest{Delivery: "guid-bad", Body: bad}); baton.ErrorCode(err) != baton.Invalid {
			t.Fatalf("an issues event without an issue: %v, want Invalid each time", err)
		}
	}

	// After a day it is forgotten, and acting again changes nothing.
	e.advance(intake.ReplayWindow + time.Minute)
	res, err = e.send(intake.WebhookRequest{Delivery: "guid-1", Body: body})
	if err != nil || res.Outcome != "exists" {
		t.Errorf("a day later: %+v, %v; want exists", res, err)
	}
	if _, err := e.send(intake.WebhookRequest{Delivery: strings.Repeat("x", 101), Body: labeled(9, "https://github.com/octo/app/issues/9")}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("a 101-character delivery id: %v, want Invalid", err)
	}
}
