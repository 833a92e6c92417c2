package intake

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Signature errors: the webhook's authentication failed. Edges answer
// 401 for both (and may answer 400 for a missing one).
var (
	ErrNoSignature  = errors.New("no X-Hub-Signature-256")
	ErrBadSignature = errors.New("X-Hub-Signature-256 does not match the body")
	ErrNoSecret     = errors.New("no webhook secret is configured")
)

// ErrForeignIssue is the cause of the error for a webhook or a listing
// whose issue is not in the source's repository.
var ErrForeignIssue = errors.New("the issue is not in the source's repository")

// ReplayWindow is how long a webhook delivery is remembered: one sent
// again within it (GitHub's redelivery, or a replay) is answered as
// already handled and not acted on.
const ReplayWindow = 24 * time.Hour

// WebhookRequest is one webhook delivery as GitHub sends it.
type WebhookRequest struct {
	// Event is X-GitHub-Event: "issues", "ping", ...
	Event string
	// Delivery is X-GitHub-Delivery, GitHub's id of this delivery (a
	// GUID); without one, the delivery is known by its body alone.
	Delivery string
	// Signature is X-Hub-Signature-256.
	Signature string
	// ContentType is the request's Content-Type: application/json, or
	// application/x-www-form-urlencoded (GitHub's default, "form"), whose
	// payload field holds the JSON. The signature is over Body as sent
	// either way.
	ContentType string
	Body        []byte
}

// WebhookResult says what a webhook did.
type WebhookResult struct {
	// Outcome is, as the webhook is answered, "queued" (its job handles
	// it), "duplicate" for a delivery already received, "pong" for a
	// ping, or "ignored"; as its job handled it, "created", "exists",
	// "closed" or "ignored", or for a comment or review, "queued" (its
	// feedback job acts on it; see FeedbackResult).
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason,omitempty"`
	SourceID   string `json:"source_id,omitempty"`
	DeliveryID string `json:"delivery_id,omitempty"`
	// ID names the webhook delivery (X-GitHub-Delivery, or the body's
	// digest without one): its job's argument.
	ID string `json:"-"`
}

// Payload is the part of a GitHub webhook body intake reads.
type Payload struct {
	Action     string `json:"action"`
	Repository struct {
		FullName string `json:"full_name"`
		HTMLURL  string `json:"html_url"`
	} `json:"repository"`
	Issue *struct {
		Number      int                     `json:"number"`
		Title       string                  `json:"title"`
		HTMLURL     string                  `json:"html_url"`
		State       string                  `json:"state"`
		Labels      []struct{ Name string } `json:"labels"`
		PullRequest json.RawMessage         `json:"pull_request,omitempty"`
	} `json:"issue"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	// Comment is an issue_comment event's comment.
	Comment *struct {
		ID      int64  `json:"id"`
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
		User    user   `json:"user"`
	} `json:"comment,omitempty"`
	// Review and PullRequest are a pull_request_review event's.
	Review *struct {
		ID      int64  `json:"id"`
		Body    string `json:"body"`
		State   string `json:"state"`
		HTMLURL string `json:"html_url"`
		User    user   `json:"user"`
	} `json:"review,omitempty"`
	PullRequest *struct {
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
	} `json:"pull_request,omitempty"`
}

// user is an account in a webhook; Type is User or Bot.
type user struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

// ParsePayload reads a webhook body. Invalid when it is not a JSON
// object.
func ParsePayload(body []byte) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		return p, baton.Errorf(baton.Invalid, "the webhook body is not a GitHub event: %s", baton.Truncate(err.Error(), 120, "…"))
	}
	return p, nil
}

// formType is the content type of a webhook GitHub sends as a form.
const formType = "application/x-www-form-urlencoded"

// EventJSON returns the JSON event of a webhook body: the body itself, or
// for a form (GitHub's default content type) its payload field. Invalid
// for a form without one.
func EventJSON(contentType string, body []byte) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.EqualFold(mt, formType) {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, baton.Errorf(baton.Invalid, "the webhook's form body does not parse: %s", baton.Truncate(err.Error(), 120, "…"))
	}
	p, ok := form["payload"]
	if !ok || len(p) != 1 {
		return nil, baton.Errorf(baton.Invalid, "the webhook's form body has no single payload field: GitHub sends the event there")
	}
	return []byte(p[0]), nil
}

// Verify checks a GitHub signature ("sha256=<hex HMAC of body>") in
// constant time.
func Verify(secret string, body []byte, signature string) error {
	if signature == "" {
		return ErrNoSignature
	}
	got, ok := strings.CutPrefix(signature, "sha256=")
	sum, err := hex.DecodeString(got)
	if !ok || err != nil {
		return ErrBadSignature
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	if !hmac.Equal(sum, m.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}

// Sign returns the signature GitHub sends for body: for tests and for
// people checking their setup.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Webhook takes one GitHub webhook delivery, sent as JSON or as a form
// (its payload field; see EventJSON), and answers once it is verified and
// recorded: the handling is a job (HandleWebhook), so GitHub's request
// never waits for it. The signature is checked first, with the secret of
// the repository's source or the server's: nothing is read or stored
// before that. Then the delivery is recorded in the database with its
// job, in one transaction: one already received within ReplayWindow (by
// id, or by an identical body) is "duplicate" and not acted on again. A
// ping, an event for a repository without a source or with a paused one,
// or an event intake does not act on is answered at once ("pong",
// "ignored") and recorded with no job. An issue or comment that is not in
// the source's repository is refused (Invalid wrapping ErrForeignIssue):
// a source's secret speaks for its own repository only.
func (s *Service) Webhook(ctx context.Context, req WebhookRequest) (WebhookResult, error) {
	body := req.Body
	event, perr := EventJSON(req.ContentType, body)
	var p Payload
	if perr == nil {
		p, perr = ParsePayload(event)
	}
	var src *baton.Source
	if perr == nil && p.Repository.FullName != "" {
		var err error
		src, err = s.sourceFor(ctx, p.Repository.FullName, p.Repository.HTMLURL)
		if err != nil && baton.ErrorCode(err) != baton.NotFound {
			// Not knowing whether the repository has a source is not
			// having none: answer an error, so GitHub delivers again.
			return WebhookResult{}, err
		}
	}
	secret := s.WebhookSecret
	if src != nil && src.WebhookSecret != "" {
		secret = src.WebhookSecret
	}
	if secret == "" {
		return WebhookResult{}, ErrNoSecret
	}
	if err := Verify(secret, body, req.Signature); err != nil {
		return WebhookResult{}, err
	}
	if perr != nil {
		return WebhookResult{}, perr
	}
	r, queued, err := triage(req.Event, p, src)
	if err != nil {
		return r, err
	}
	w, err := s.record(req)
	if err != nil {
		return r, err
	}
	r.ID = w.ID
	if queued {
		w.Event, w.Payload = req.Event, string(event)
	} else {
		w.Outcome, w.Reason = r.Outcome, r.Reason
	}
	fresh := false
	err = s.Deliveries.Queue.InTx(ctx, func(tx queue.Tx) error {
		var err error
		if fresh, err = tx.Store().CreateWebhook(ctx, w, w.ReceivedAt.Add(-ReplayWindow)); err != nil || !fresh || !queued {
			return err
		}
		return tx.Enqueue(ctx, queue.WebhookArgs{ID: w.ID})
	})
	switch {
	case err != nil:
		return r, err
	case !fresh:
		return WebhookResult{Outcome: "duplicate", Reason: "already handled: this webhook delivery was received before, and is acted on once", ID: w.ID}, nil
	}
	return r, nil
}

// triage decides at once what a verified webhook needs no work for, and
// refuses an issues event without its issue, and an issue, comment or
// review that is not in the source's repository; queued is true for the
// rest.
func triage(event string, p Payload, src *baton.Source) (r WebhookResult, queued bool, err error) {
	switch {
	case event == "ping":
		return WebhookResult{Outcome: "pong"}, false, nil
	case src == nil:
		return WebhookResult{Outcome: "ignored", Reason: "no source for " + baton.Truncate(p.Repository.FullName, 100, "…")}, false, nil
	}
	r = WebhookResult{Outcome: "ignored", SourceID: src.ID}
	var where string
	switch {
	case src.Paused:
		r.Reason = "the source is paused"
		return r, false, nil
	case event == "issues":
		if p.Issue == nil || p.Issue.Number <= 0 {
			return r, false, baton.Errorf(baton.Invalid, "an issues event without an issue")
		}
		if len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null" {
			r.Reason = "a pull request"
			return r, false, nil
		}
		ref, err := issueOf(src, p.Issue.HTMLURL)
		if err != nil {
			return r, false, err
		}
		if ref.Number != p.Issue.Number {
			return r, false, baton.WrapError(baton.Invalid, ErrForeignIssue, "the event names issue #%d but its html_url is %s: refused", p.Issue.Number, ref.URL())
		}
	case event == "issue_comment" && p.Issue != nil:
		where = p.Issue.HTMLURL
	case event == "pull_request_review" && p.PullRequest != nil:
		where = p.PullRequest.HTMLURL
	case event != "issue_comment" && event != "pull_request_review":
		r.Reason = "baton acts on issues, issue_comment and pull_request_review events only"
		return r, false, nil
	}
	if where != "" {
		if _, err := issueOf(src, where); err != nil {
			return r, false, err
		}
	}
	r.Outcome, r.Reason = "queued", "to be handled by its job"
	return r, true, nil
}

// record names a verified delivery: GitHub's id, else its body's digest.
func (s *Service) record(req WebhookRequest) (sqlstore.WebhookDelivery, error) {
	sum := sha256.Sum256(req.Body)
	digest := hex.EncodeToString(sum[:])
	id := strings.TrimSpace(req.Delivery)
	if len(id) > 100 || strings.ContainsFunc(id, func(r rune) bool { return r < '!' || r > '~' }) {
		return sqlstore.WebhookDelivery{}, baton.Errorf(baton.Invalid, "bad X-GitHub-Delivery %q: want GitHub's delivery id", baton.Truncate(id, 100, "…"))
	}
	if id == "" {
		id = "sha256:" + digest
	}
	return sqlstore.WebhookDelivery{ID: id, BodySHA256: digest, ReceivedAt: s.now()}, nil
}

// WorkWebhook is the queue's handler of webhook jobs: HandleWebhook.
func (s *Service) WorkWebhook(ctx context.Context, a queue.WebhookArgs, job queue.Job) error {
	_, err := s.HandleWebhook(ctx, a, job)
	return err
}

// HandleWebhook handles a webhook Webhook recorded (see webhook), once:
// what it did is recorded and logged, and its payload dropped. An issue
// outside the source's repository is refused and logged. A rate limit
// snoozes the job until it resets; another failure fails the attempt, and
// River tries again; when the last attempt fails, the webhook is
// forgotten, so GitHub's redelivery of it is acted on.
func (s *Service) HandleWebhook(ctx context.Context, a queue.WebhookArgs, job queue.Job) (WebhookResult, error) {
	w, err := s.store().FindWebhook(ctx, a.ID)
	if baton.ErrorCode(err) == baton.NotFound {
		return WebhookResult{}, nil
	}
	if err != nil {
		return WebhookResult{}, err
	}
	if w.Payload == "" {
		return WebhookResult{Outcome: "duplicate", Reason: "already handled: " + w.Outcome, ID: w.ID}, nil
	}
	log := s.log().With("webhook", w.ID, "event", w.Event)
	p, err := ParsePayload([]byte(w.Payload))
	var src *baton.Source
	if err == nil && p.Repository.FullName != "" {
		src, err = s.sourceFor(ctx, p.Repository.FullName, p.Repository.HTMLURL)
		if baton.ErrorCode(err) == baton.NotFound {
			src, err = nil, nil
		}
	}
	var r WebhookResult
	if err == nil {
		r, err = s.webhook(ctx, w.Event, p, src)
	}
	r.ID = w.ID
	var rl *github.RateLimitError
	switch {
	case err == nil:
	case baton.ErrorCode(err) == baton.Invalid:
		r.Outcome, r.Reason = "refused", baton.ErrorMessage(err)
		log.Warn("intake: webhook refused: "+r.Reason, "source", r.SourceID)
		return r, errors.Join(err, s.store().HandledWebhook(context.WithoutCancel(ctx), w.ID, r.Outcome, r.Reason))
	case errors.As(err, &rl):
		return r, &queue.SnoozeError{Until: rl.Reset, Err: err}
	case job.Last():
		log.Warn(fmt.Sprintf("intake: webhook not handled after %d attempts, forgotten so that GitHub's redelivery acts: %s", job.Attempt, baton.ErrorMessage(err)))
		return r, errors.Join(err, s.store().ReleaseWebhook(context.WithoutCancel(ctx), w.ID))
	default:
		return r, err
	}
	if err := s.store().HandledWebhook(context.WithoutCancel(ctx), w.ID, r.Outcome, r.Reason); err != nil {
		return r, err
	}
	msg := fmt.Sprintf("intake: webhook %s %s", w.Event, r.Outcome)
	if r.Reason != "" {
		msg += ": " + r.Reason
	}
	log.Info(msg, "source", r.SourceID, "delivery", r.DeliveryID)
	return r, nil
}

// webhook acts on a verified, new delivery, for its job.
func (s *Service) webhook(ctx context.Context, event string, p Payload, src *baton.Source) (WebhookResult, error) {
	if event == "ping" {
		return WebhookResult{Outcome: "pong"}, nil
	}
	if src == nil {
		return WebhookResult{Outcome: "ignored", Reason: "no source for " + baton.Truncate(p.Repository.FullName, 100, "…")}, nil
	}
	r := WebhookResult{Outcome: "ignored", SourceID: src.ID}
	switch {
	case src.Paused:
		r.Reason = "the source is paused"
		return r, nil
	case event == "issue_comment" || event == "pull_request_review":
		return s.commentWebhook(ctx, event, p, src)
	case event != "issues":
		r.Reason = "baton acts on issues, issue_comment and pull_request_review events only"
		return r, nil
	case p.Issue == nil || p.Issue.Number <= 0:
		return r, baton.Errorf(baton.Invalid, "an issues event without an issue")
	case len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null":
		r.Reason = "a pull request"
		return r, nil
	}
	if ref, err := issueOf(src, p.Issue.HTMLURL); err != nil {
		return r, err
	} else if ref.Number != p.Issue.Number {
		return r, baton.WrapError(baton.Invalid, ErrForeignIssue, "the event names issue #%d but its html_url is %s: refused", p.Issue.Number, ref.URL())
	}
	is := p.Issue
	hasLabel := false
	for _, l := range is.Labels {
		hasLabel = hasLabel || strings.EqualFold(l.Name, src.Label)
	}
	thisLabel := p.Label != nil && strings.EqualFold(p.Label.Name, src.Label)
	switch p.Action {
	case "opened", "labeled", "reopened":
		if !hasLabel || is.State == "closed" || (p.Action == "labeled" && !thisLabel) {
			r.Reason = fmt.Sprintf("issue #%d is not open with label %q", is.Number, src.Label)
			return r, nil
		}
		created, err := s.bring(ctx, src, is.Number, is.Title, is.HTMLURL)
		if err != nil {
			return r, err
		}
		r.Outcome = "exists"
		if created {
			r.Outcome = "created"
		}
	case "closed", "unlabeled":
		if p.Action == "unlabeled" && !thisLabel {
			r.Reason = "another label"
			return r, nil
		}
		tracked, err := s.tracked(ctx, src.ID)
		if err != nil {
			return r, err
		}
		si, ok := tracked[is.Number]
		if !ok || !si.Open {
			r.Reason = fmt.Sprintf("issue #%d has no open delivery", is.Number)
			return r, nil
		}
		why := fmt.Sprintf("issue #%d was closed", is.Number)
		if p.Action == "unlabeled" {
			why = fmt.Sprintf("issue #%d lost the label %q", is.Number, src.Label)
		}
		closed, err := s.withdraw(ctx, src, si, why)
		if err != nil {
			return r, err
		}
		r.DeliveryID = si.DeliveryID
		r.Reason = why
		if closed {
			r.Outcome = "closed"
		}
		return r, nil
	default:
		r.Reason = "action " + baton.Truncate(p.Action, 40, "…") + " changes nothing"
		return r, nil
	}
	if si, ok, _ := s.trackedOne(ctx, src.ID, is.Number); ok {
		r.DeliveryID = si
		// A closed delivery stays closed (close is final): say so rather
		// than let "exists" read as work resuming.
		if d, err := s.Deliveries.Current(ctx, si); err == nil && r.Outcome == "exists" && d.Phase == baton.PhaseClose {
			r.Reason = fmt.Sprintf("issue #%d's delivery %s is closed, and a closed delivery is not reopened", is.Number, si)
		}
	}
	return r, nil
}

// commentWebhook acts on a comment (issue_comment created) or a review
// (pull_request_review submitted) of src's repository: see feedback. Its
// issue or pull request must be in the repository.
func (s *Service) commentWebhook(ctx context.Context, event string, p Payload, src *baton.Source) (WebhookResult, error) {
	r := WebhookResult{Outcome: "ignored", SourceID: src.ID}
	if err := s.store().SetCommentWebhook(ctx, src.ID, s.now()); err != nil {
		return r, err
	}
	var ev commentEvent
	var where string
	switch {
	case event == "issue_comment" && p.Action != "created":
		r.Reason = "comment " + baton.Truncate(p.Action, 40, "…") + ": only a new comment asks"
		return r, nil
	case event == "pull_request_review" && p.Action != "submitted":
		r.Reason = "review " + baton.Truncate(p.Action, 40, "…") + ": only a submitted review asks"
		return r, nil
	case event == "issue_comment":
		if p.Comment == nil || p.Issue == nil {
			r.Reason = "the event names no comment and issue"
			return r, nil
		}
		c := p.Comment
		ev = commentEvent{kind: "issue_comment", id: c.ID, author: c.User.Login, bot: c.User.Type == "Bot", body: c.Body, url: c.HTMLURL}
		where = p.Issue.HTMLURL
	default:
		if p.Review == nil || p.PullRequest == nil {
			r.Reason = "the event names no review and pull request"
			return r, nil
		}
		rv := p.Review
		ev = commentEvent{kind: "review", id: rv.ID, author: rv.User.Login, bot: rv.User.Type == "Bot", body: rv.Body, url: rv.HTMLURL, state: rv.State}
		where = p.PullRequest.HTMLURL
	}
	ref, err := issueOf(src, where)
	if err != nil {
		return r, err
	}
	ev.number = ref.Number
	if !s.asks(ev) {
		r.Reason = "it does not mention " + s.handle() + " or request changes"
		return r, nil
	}
	fr, err := s.feedback(ctx, src, ev)
	if err != nil {
		return r, err
	}
	r.Outcome, r.Reason, r.DeliveryID = fr.Outcome, fr.Reason, fr.DeliveryID
	if r.Outcome == "duplicate" {
		r.Outcome = "ignored"
	}
	return r, nil
}

func (s *Service) trackedOne(ctx context.Context, id string, n int) (string, bool, error) {
	m, err := s.tracked(ctx, id)
	if err != nil {
		return "", false, err
	}
	si, ok := m[n]
	return si.DeliveryID, ok, nil
}

// sourceFor finds the source of a repository named in a payload: by
// full name, with the host of its html_url for GitHub Enterprise Server.
func (s *Service) sourceFor(ctx context.Context, fullName, htmlURL string) (*baton.Source, error) {
	name := fullName
	if u, err := url.Parse(htmlURL); err == nil && u.Host != "" && !strings.EqualFold(u.Host, github.DefaultHost) {
		name = strings.ToLower(u.Host) + "/" + fullName
	}
	src, err := s.store().FindSource(ctx, name)
	if err != nil && name != fullName {
		return s.store().FindSource(ctx, fullName)
	}
	return src, err
}

// issueOf reads the URL of an issue of src's repository. An issue on
// another host or in another repository is Invalid, wrapping
// ErrForeignIssue.
func issueOf(src *baton.Source, issueURL string) (github.IssueRef, error) {
	repo, err := github.ParseRepo(src.Repo)
	if err != nil {
		return github.IssueRef{}, err
	}
	if strings.TrimSpace(issueURL) == "" {
		return github.IssueRef{}, baton.Errorf(baton.Invalid, "the issue has no html_url")
	}
	ref, err := github.ParseIssueURL(issueURL)
	if err != nil {
		return github.IssueRef{}, err
	}
	if ref.Repo.Host != repo.Host || !strings.EqualFold(ref.Repo.Owner, repo.Owner) || !strings.EqualFold(ref.Repo.Name, repo.Name) {
		return ref, baton.WrapError(baton.Invalid, ErrForeignIssue, "issue %s is not in %s, the repository of source %s: refused", ref.URL(), src.Repo, src.ID)
	}
	return ref, nil
}
