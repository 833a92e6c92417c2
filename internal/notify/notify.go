// Package notify tells people about deliveries where they are: outbound
// webhooks (a JSON body, signed with HMAC-SHA256 like GitHub's own) and
// Slack incoming webhooks, when a delivery waits for a person, fails or
// closes. The delivery pipeline writes each notice, and the River job
// that sends it, in the transaction of its change (the notifications
// table, queue.NoticeArgs); a Notifier in `baton serve` works the job:
// it sends the notice to the server's targets and to those of the
// delivery's source, records each target that took it, and fails the
// attempt while one did not, so River tries again, later each time, and
// never sends one target a notice twice (a process killed between a
// target's answer and the record sends it again: at least once).
//
// Targets are set by the server's operator only (serve's flags and
// environment, `baton source add`), never through the API: a webhook URL
// is where baton's news goes, and a Slack URL is itself a credential. A
// notice carries what people read about a delivery anyway; no token,
// secret or URL of a target is ever part of one.
package notify

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>" with the
// target's secret, as GitHub signs its webhooks.
const SignatureHeader = "X-Baton-Signature-256"

// Headers that say what a webhook is.
const (
	EventHeader = "X-Baton-Event"    // delivery.waiting, delivery.failed, delivery.closed
	IDHeader    = "X-Baton-Delivery" // the notification's id: the same on a retry
)

const (
	// sendTimeout bounds one request to a target.
	sendTimeout = 10 * time.Second
	// maxReplyRead bounds what is read of a target's answer.
	maxReplyRead = 4 << 10
)

// Notifier sends the notifications the delivery pipeline stored.
type Notifier struct {
	Store *sqlstore.Store
	// Server is the server's own targets, for every delivery.
	Server baton.Notify
	// PublicURL is the dashboard's address, for the links in notices.
	PublicURL string
	// Client sends the requests (default: one with a 10 s timeout that
	// follows no redirect).
	Client    *http.Client
	Log       *slog.Logger
	UserAgent string
}

func (n *Notifier) log() *slog.Logger {
	if n.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return n.Log
}

func (n *Notifier) client() *http.Client {
	if n.Client != nil {
		return n.Client
	}
	return &http.Client{Timeout: sendTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// target is one place a notice goes.
type target struct {
	key    string // kind and a hash of the URL: what Done lists
	kind   string // webhook or slack
	url    string
	secret string
	label  string // for logs: the kind and the host, never the URL
}

func targetsOf(n baton.Notify, whose string) []target {
	var out []target
	mk := func(kind, u, secret string) target {
		sum := sha256.Sum256([]byte(kind + "\x00" + u))
		host := ""
		if p, err := url.Parse(u); err == nil {
			host = p.Hostname()
		}
		return target{key: kind + ":" + hex.EncodeToString(sum[:6]), kind: kind, url: u, secret: secret, label: whose + " " + kind + " at " + host}
	}
	if n.WebhookURL != "" {
		out = append(out, mk("webhook", n.WebhookURL, n.WebhookSecret))
	}
	if n.SlackURL != "" {
		out = append(out, mk("slack", n.SlackURL, ""))
	}
	return out
}

// Send works a notice job: it sends the notification to the targets that
// have not taken it and records each that does. While one fails, the
// attempt fails and River tries again; on the job's last attempt the
// notification is given up, and the log says so. A notification sent (or
// gone) leaves nothing behind.
func (n *Notifier) Send(ctx context.Context, args queue.NoticeArgs, job queue.Job) error {
	no, err := n.Store.FindNotification(ctx, args.ID)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil // sent by an attempt whose end was not recorded
	}
	if err != nil {
		return err
	}
	var notice delivery.Notice
	if err := json.Unmarshal([]byte(no.Body), &notice); err != nil {
		n.log().Warn(fmt.Sprintf("notify: notification %d of delivery %s does not parse, dropped: %v", no.ID, no.DeliveryID, err))
		return n.Store.DeleteNotification(ctx, no.ID)
	}
	notice.Delivery.URL = delivery.DashboardURL(n.PublicURL, notice.Delivery.ID)
	body, err := json.Marshal(notice)
	if err != nil {
		return err
	}
	targets := targetsOf(n.Server, "server")
	if src, err := n.sourceOf(ctx, notice.Delivery.Repository); err != nil {
		return err
	} else if src != nil {
		targets = append(targets, targetsOf(src.Notify, "source "+src.Repo)...)
	}
	var failed []string
	for _, t := range targets {
		if slices.Contains(no.Done, t.key) {
			continue
		}
		if err := n.post(ctx, t, no, notice, body); err != nil {
			failed = append(failed, t.label+": "+err.Error())
			continue
		}
		no.Done = append(no.Done, t.key)
		if err := n.Store.SetNotificationDone(context.WithoutCancel(ctx), no.ID, no.Done); err != nil {
			return err
		}
	}
	if len(failed) == 0 {
		return n.Store.DeleteNotification(context.WithoutCancel(ctx), no.ID)
	}
	why := strings.Join(failed, "; ")
	if job.Last() {
		n.log().Warn(fmt.Sprintf("notify: gave up on %s of delivery %s after %d attempts: %s", no.Event, no.DeliveryID, job.Attempt, why))
		if err := n.Store.DeleteNotification(context.WithoutCancel(ctx), no.ID); err != nil {
			return err
		}
	} else {
		n.log().Info(fmt.Sprintf("notify: %s of delivery %s not sent (attempt %d of %d), tried again later: %s", no.Event, no.DeliveryID, job.Attempt, job.MaxAttempts, why))
	}
	return errors.New(why)
}

// sourceOf finds the source of a delivery's repository, nil when it has
// none.
func (n *Notifier) sourceOf(ctx context.Context, repository string) (*baton.Source, error) {
	src, err := n.Store.FindSource(ctx, repository)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil, nil
	}
	return src, err
}

// post sends a notice to one target: the JSON body to a webhook, signed
// when the target has a secret; a line of text to Slack. Any 2xx answer
// takes it.
func (n *Notifier) post(ctx context.Context, t target, no *sqlstore.Notification, notice delivery.Notice, body []byte) error {
	payload := body
	if t.kind == "slack" {
		b, err := json.Marshal(map[string]string{"text": SlackText(notice)})
		if err != nil {
			return err
		}
		payload = b
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(payload))
	if err != nil {
		return errors.New("bad URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", cmp.Or(n.UserAgent, "baton"))
	if t.kind == "webhook" {
		req.Header.Set(EventHeader, no.Event)
		req.Header.Set(IDHeader, strconv.FormatInt(no.ID, 10))
		if t.secret != "" {
			req.Header.Set(SignatureHeader, Sign(t.secret, payload))
		}
	}
	resp, err := n.client().Do(req)
	if err != nil {
		// The error names the URL, which may be a credential: say less.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("no answer: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReplyRead))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// Sign returns the signature header's value for body: "sha256=" and the
// hex HMAC-SHA256 with secret. A receiver computes the same over the raw
// body and compares in constant time.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SlackText is a notice as one line of Slack text: what happened, the
// delivery (linked to its page when there is one), and why.
func SlackText(n delivery.Notice) string {
	d := n.Delivery
	var what string
	switch n.Event {
	case delivery.NoticeWaiting:
		what = fmt.Sprintf("waits for you at %s (%s)", d.Phase, d.Status)
	case delivery.NoticeFailed:
		what = fmt.Sprintf("failed at %s", d.Phase)
	case delivery.NoticeClosed:
		what = fmt.Sprintf("closed (%s)", d.Status)
	default:
		what = n.Event
	}
	name := fmt.Sprintf("#%d %s", d.Seq, slackEscape(d.Title))
	if d.URL != "" {
		name = "<" + d.URL + "|" + name + ">"
	}
	text := fmt.Sprintf("baton: %s in %s %s", name, slackEscape(d.Repository), what)
	if n.Reason != "" {
		text += ": " + slackEscape(baton.Truncate(n.Reason, 300, "…"))
	}
	return text
}

// slackEscape escapes what Slack's mrkdwn treats as markup: &, < and >,
// so a title cannot make a link or mention of its own.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(baton.StripControls(s))
}
