package intake

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
)

// Signature errors: the webhook's authentication failed. Edges answer
// 401 for both (and may answer 400 for a missing one).
var (
	ErrNoSignature  = errors.New("no X-Hub-Signature-256")
	ErrBadSignature = errors.New("X-Hub-Signature-256 does not match the body")
	ErrNoSecret     = errors.New("no webhook secret is configured")
)

// WebhookResult says what a webhook did.
type WebhookResult struct {
	// Outcome is "created", "exists", "closed", "ignored" or "pong".
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason,omitempty"`
	SourceID   string `json:"source_id,omitempty"`
	DeliveryID string `json:"delivery_id,omitempty"`
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

// Webhook handles one GitHub delivery of event with its signature. The
// signature is checked first, with the secret of the repository's source
// or the server's: nothing is acted on before that. A ping, an event for
// a repository without a source, or an event intake does not act on is
// "ignored" (or "pong"). issues events: opened, labeled and reopened with
// the source's label bring the issue in; closed, and unlabeled of the
// label, close its delivery.
func (s *Service) Webhook(ctx context.Context, event, signature string, body []byte) (WebhookResult, error) {
	p, perr := ParsePayload(body)
	var src *baton.Source
	if perr == nil && p.Repository.FullName != "" {
		src, _ = s.sourceFor(ctx, p.Repository.FullName, p.Repository.HTMLURL)
	}
	secret := s.WebhookSecret
	if src != nil && src.WebhookSecret != "" {
		secret = src.WebhookSecret
	}
	if secret == "" {
		return WebhookResult{}, ErrNoSecret
	}
	if err := Verify(secret, body, signature); err != nil {
		return WebhookResult{}, err
	}
	if perr != nil {
		return WebhookResult{}, perr
	}
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
	case event != "issues":
		r.Reason = "baton acts on issues events only"
		return r, nil
	case p.Issue == nil || p.Issue.Number <= 0:
		return r, baton.Errorf(baton.Invalid, "an issues event without an issue")
	case len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null":
		r.Reason = "a pull request"
		return r, nil
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
		if _, err := url.Parse(is.HTMLURL); err != nil || is.HTMLURL == "" {
			return r, baton.Errorf(baton.Invalid, "issue #%d has no html_url", is.Number)
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
