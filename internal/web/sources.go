package web

import (
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/intake"
)

type sourceJSON struct {
	ID          string   `json:"id"`
	Repo        string   `json:"repo"`
	APIURL      string   `json:"api_url,omitempty"`
	Label       string   `json:"label"`
	Endpoint    string   `json:"endpoint,omitempty"`
	Checkpoints []string `json:"checkpoints"`
	Agent       string   `json:"agent,omitempty"`
	Draft       string   `json:"draft,omitempty"`
	Paused      bool     `json:"paused"`
	HasSecret   bool     `json:"webhook_secret_set"`
	// Notify says which notification targets the source has; where they
	// are is never shown (a Slack URL is a credential).
	NotifyWebhook bool `json:"notify_webhook_set"`
	NotifySlack   bool `json:"notify_slack_set"`
	// Setup is the set-up of the source's deliveries, set on the server
	// only (`baton source set --setup`).
	Setup     baton.SourceSetup `json:"setup,omitzero"`
	Sync      baton.SyncStatus  `json:"sync"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

func toSource(s *baton.Source) sourceJSON {
	v := sourceJSON{ID: s.ID, Repo: s.Repo, APIURL: s.APIURL, Label: s.Label, Endpoint: string(s.Endpoint), Checkpoints: []string{},
		Agent: s.Agent, Draft: string(s.Draft), Paused: s.Paused, HasSecret: s.WebhookSecret != "",
		NotifyWebhook: s.Notify.WebhookURL != "", NotifySlack: s.Notify.SlackURL != "", Setup: s.Setup, Sync: s.Sync, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	for _, p := range s.Checkpoints {
		v.Checkpoints = append(v.Checkpoints, string(p))
	}
	return v
}

// SourceRequest is the body of POST /api/sources and PATCH
// /api/sources/{id}. Absent fields are left alone (defaults on add). An
// agent is claude, codex, droid or pi: a command agent can be set only from
// the command line. api_url is refused: it is where the repository's
// token goes, so only the server's owner sets it, with `baton source add
// --api-url`.
type SourceRequest struct {
	Repo string `json:"repo,omitempty"`
	// APIURL is read only to be refused with a message that says where
	// it is set.
	APIURL        *string   `json:"api_url,omitempty"`
	Label         *string   `json:"label,omitempty"`
	Endpoint      *string   `json:"endpoint,omitempty"`
	Checkpoints   *[]string `json:"checkpoints,omitempty"`
	Agent         *string   `json:"agent,omitempty"`
	Draft         *string   `json:"draft,omitempty"`
	Paused        *bool     `json:"paused,omitempty"`
	WebhookSecret *string   `json:"webhook_secret,omitempty"`
	// Setup is read only to be refused with a message that says where
	// it is set: its commands run on the server.
	Setup *baton.SourceSetup `json:"setup,omitempty"`
}

// DecodeSource parses a source body strictly. Invalid when it sets
// api_url.
func DecodeSource(b []byte) (SourceRequest, error) {
	var v SourceRequest
	if err := decodeStrict(b, &v); err != nil {
		return v, err
	}
	if v.APIURL != nil {
		return SourceRequest{}, baton.Errorf(baton.Invalid, "api_url cannot be set through the API: the repository's token is sent there, so it is set on the server with `baton source add --api-url`")
	}
	if v.Setup != nil {
		return SourceRequest{}, baton.Errorf(baton.Invalid, "setup cannot be set through the API: its commands run on the server, so it is set there with `baton source set <repo> --setup CMD`")
	}
	return v, nil
}

func (v SourceRequest) input() intake.SourceInput {
	return intake.SourceInput{Repo: v.Repo, Label: v.Label, Endpoint: v.Endpoint, Checkpoints: v.Checkpoints,
		Agent: v.Agent, Draft: v.Draft, Paused: v.Paused, WebhookSecret: v.WebhookSecret}
}

func (s *Server) intake() (*intake.Service, error) {
	if s.Intake == nil {
		return nil, baton.Errorf(baton.Unavailable, "this server has no GitHub intake")
	}
	return s.Intake, nil
}

func (s *Server) listSources(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	srcs, err := in.List(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Sources []sourceJSON `json:"sources"`
	}{[]sourceJSON{}}
	for _, src := range srcs {
		out.Sources = append(out.Sources, toSource(src))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) addSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	req, err := DecodeSource(b)
	if err != nil {
		return err
	}
	src, err := in.Add(r.Context(), req.input())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/sources/"+src.ID)
	writeJSON(w, http.StatusCreated, toSource(src))
	return nil
}

func (s *Server) getSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	src, err := in.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSource(src))
	return nil
}

func (s *Server) updateSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	req, err := DecodeSource(b)
	if err != nil {
		return err
	}
	if req.Repo != "" {
		return baton.Errorf(baton.Invalid, "a source's repository cannot change: remove it and add another")
	}
	src, err := in.Update(r.Context(), r.PathValue("id"), req.input())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSource(src))
	return nil
}

func (s *Server) removeSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	if err := in.Remove(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) syncSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	src, err := in.Sync(r.Context(), r.PathValue("id"))
	if src == nil {
		return err
	}
	// A failed sync is the source's state, not the request's failure: the
	// status says what went wrong.
	status := http.StatusOK
	if err != nil {
		status = statusOf(baton.ErrorCode(err))
		if status == http.StatusServiceUnavailable && !src.Sync.RateLimitReset.IsZero() {
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", retryAfter(src.Sync.RateLimitReset, s.now()))
		}
	}
	writeJSON(w, status, toSource(src))
	return nil
}

func retryAfter(t, now time.Time) string {
	secs := int(t.Sub(now).Seconds()) + 1
	return itoa(max(secs, 1))
}

// intakeSetJSON is the intake part of the settings.
type intakeSetJSON struct {
	Polling          bool    `json:"polling"`
	PollEverySeconds float64 `json:"poll_every_seconds"`
	WebhookPath      string  `json:"webhook_path"`
}

func toIntakeSettings(st intake.Settings) intakeSetJSON {
	return intakeSetJSON{Polling: st.Polling, PollEverySeconds: st.PollEvery.Seconds(), WebhookPath: "/api/webhooks/github"}
}

// SettingsRequest is the body of PATCH /api/settings.
type SettingsRequest struct {
	Polling          *bool    `json:"polling,omitempty"`
	PollEverySeconds *float64 `json:"poll_every_seconds,omitempty"`
}

// DecodeSettings parses a settings body strictly.
func DecodeSettings(b []byte) (SettingsRequest, error) {
	var v SettingsRequest
	err := decodeStrict(b, &v)
	return v, err
}

func (s *Server) applySettings(r *http.Request, req SettingsRequest) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	u := intake.SettingsUpdate{Polling: req.Polling}
	if req.PollEverySeconds != nil {
		// Range first: a float beyond int64 nanoseconds converts to
		// whatever the machine makes of it.
		secs := *req.PollEverySeconds
		if math.IsNaN(secs) || secs < 0 || secs > (24*time.Hour).Seconds() {
			return baton.Errorf(baton.Invalid, "poll interval %v seconds: want %d to %d", secs, int(intake.MinPollEvery.Seconds()), int((24 * time.Hour).Seconds()))
		}
		d := time.Duration(secs * float64(time.Second))
		u.PollEvery = &d
	}
	_, err = in.UpdateSettings(r.Context(), u)
	return err
}

func (s *Server) updateSettings(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	req, err := DecodeSettings(b)
	if err != nil {
		return err
	}
	if err := s.applySettings(r, req); err != nil {
		return err
	}
	return s.getSettings(w, r)
}

// githubWebhook takes GitHub's webhooks: the signature is the
// authentication (no bearer token), checked before anything is read. A
// new delivery is answered 202 as soon as it is recorded (its job handles
// it), one received before 200; an issue outside the source's repository
// is refused (400) and logged, as it means someone holding a webhook
// secret tried to reach another repository.
func (s *Server) githubWebhook(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	res, err := in.Webhook(r.Context(), intake.WebhookRequest{
		Event: r.Header.Get("X-GitHub-Event"), Delivery: r.Header.Get("X-GitHub-Delivery"),
		Signature: r.Header.Get("X-Hub-Signature-256"), ContentType: r.Header.Get("Content-Type"), Body: b,
	})
	switch {
	case errors.Is(err, intake.ErrNoSignature), errors.Is(err, intake.ErrBadSignature):
		return httpError(codeUnauthorized, "webhook signature missing or wrong: set the same secret on GitHub and in baton (the source's, or BATON_WEBHOOK_SECRET)")
	case errors.Is(err, intake.ErrNoSecret):
		return httpError(codeUnauthorized, "no webhook secret is configured: set BATON_WEBHOOK_SECRET or the source's secret")
	case errors.Is(err, intake.ErrForeignIssue):
		s.log(r).Warn("webhook refused: "+baton.ErrorMessage(err), "source", res.SourceID, "delivery", baton.Truncate(r.Header.Get("X-GitHub-Delivery"), 100, "…"))
		return err
	case err != nil:
		return err
	}
	status := http.StatusAccepted
	if res.Outcome == "duplicate" {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
	return nil
}
