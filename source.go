package baton

import (
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultSourceLabel is the label that opts an issue into delivery when
// a source names none.
const DefaultSourceLabel = "baton"

// Source is a GitHub repository whose labelled open issues become
// deliveries: polled (every page, with ETags) and told by webhooks. A
// delivery a source created is closed only when its issue is closed or
// loses the label, seen in an event or in a complete listing.
type Source struct {
	ID string `json:"id"`
	// Repo is owner/name, or host/owner/name for GitHub Enterprise Server.
	Repo string `json:"repo"`
	// APIURL overrides the REST API base URL ("" for the repository's
	// host).
	APIURL string `json:"api_url,omitempty"`
	Label  string `json:"label"`
	// Endpoint, Checkpoints and Agent are the deliveries' settings; empty
	// (nil checkpoints) keeps the server's defaults.
	Endpoint    Phase   `json:"endpoint,omitempty"`
	Checkpoints []Phase `json:"checkpoints,omitempty"`
	Agent       string  `json:"agent,omitempty"`
	// Draft is how the deliveries' pull requests open ("" keeps the
	// default, auto).
	Draft DraftMode `json:"draft,omitempty"`
	// Setup is the set-up of the source's deliveries, the operator's:
	// set on the server only (it is commands to run), shown to all.
	Setup  SourceSetup `json:"setup,omitzero"`
	Paused bool        `json:"paused"`
	// Notify is where the source's deliveries are announced when they
	// wait for a person, fail or close, besides the server's own targets.
	// Set on the server only; never shown (its URLs and secret are
	// credentials).
	Notify Notify `json:"-"`
	// CommentWebhookAt is when a comment or review webhook last arrived
	// for the repository: while one arrives, the poller leaves comments
	// to webhooks.
	CommentWebhookAt time.Time `json:"-"`
	// CommentsPolledAt is up to when the poller read the repository's
	// comments.
	CommentsPolledAt time.Time `json:"-"`
	// WebhookSecret verifies this repository's webhooks; "" falls back to
	// the server's secret. Never shown.
	WebhookSecret string     `json:"-"`
	Sync          SyncStatus `json:"sync"`
	// Listing is the last complete listing, kept for conditional requests.
	// Opaque outside intake.
	Listing   string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SourceSetup is a source's set-up for its deliveries: the commands
// that make a worktree ready, the files whose change runs them again
// (none: DefaultSetupFiles) and what they alone may reach.
type SourceSetup struct {
	Commands    []string `json:"commands,omitempty"`
	Files       []string `json:"files,omitempty"`
	EgressAllow []string `json:"egress_allow,omitempty"`
}

// IsZero reports whether the source names no set-up.
func (s SourceSetup) IsZero() bool { return len(s.Commands) == 0 }

// SyncStatus is how a source's last sync went.
type SyncStatus struct {
	LastSyncAt time.Time `json:"last_sync_at,omitzero"`
	// LastOKAt is the end of the last complete listing.
	LastOKAt time.Time  `json:"last_ok_at,omitzero"`
	Result   SyncResult `json:"result"`
	// Error says why the last sync failed ("" when it did not).
	Error string `json:"error,omitempty"`
	// RateLimitReset is when GitHub's rate limit lets the source (and
	// every source on the same host) be read again.
	RateLimitReset time.Time `json:"rate_limit_reset,omitzero"`
}

// SyncResult counts what a sync saw and did.
type SyncResult struct {
	Open        int `json:"open"`
	Created     int `json:"created"`
	Closed      int `json:"closed"`
	Requests    int `json:"requests"`
	NotModified int `json:"not_modified"`
}

// Notify is where news of deliveries goes: an outbound webhook (a JSON
// body signed with Secret) and a Slack incoming webhook. Empty fields
// send nothing.
type Notify struct {
	WebhookURL    string `json:"webhook_url,omitempty"`
	WebhookSecret string `json:"webhook_secret,omitempty"`
	SlackURL      string `json:"slack_url,omitempty"`
}

// IsZero reports whether n sends nothing.
func (n Notify) IsZero() bool { return n.WebhookURL == "" && n.SlackURL == "" }

// CheckTargetURL says whether u may be where news goes (a Notify URL,
// named what in the message): an http(s) URL with a host and no
// credentials in it. The message never repeats the URL, which may be a
// credential itself (Slack's).
func CheckTargetURL(what, u string) error {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || p.User != nil || p.Fragment != "" {
		return Errorf(Invalid, "%s is not an http(s) URL without credentials", what)
	}
	return nil
}

// validLabel is what baton accepts as a label: GitHub allows more, but a
// filter label with a comma cannot be expressed in its API.
func validLabel(l string) bool {
	n := utf8.RuneCountInString(l)
	return n >= 1 && n <= 50 && strings.TrimSpace(l) == l && !strings.ContainsFunc(l, func(r rune) bool { return r == ',' || r < ' ' })
}

// Validate checks a source: a repository, a label GitHub's filter can
// express, runnable checkpoints and endpoint.
func (s *Source) Validate() error {
	if strings.Count(s.Repo, "/") < 1 || strings.Count(s.Repo, "/") > 2 || strings.ContainsAny(s.Repo, " \t\n") {
		return Errorf(Invalid, "bad repository %q: want owner/name", Truncate(s.Repo, 100, "…"))
	}
	if !validLabel(s.Label) {
		return Errorf(Invalid, "bad label %q: 1 to 50 characters, no commas", Truncate(s.Label, 60, "…"))
	}
	if s.Endpoint != "" {
		if err := CheckEndpoint(s.Endpoint); err != nil {
			return err
		}
	}
	for _, p := range s.Checkpoints {
		if !p.Runnable() {
			return Errorf(Invalid, "checkpoint %q is not a phase a person can gate", p)
		}
	}
	if s.Draft != "" {
		if _, err := ParseDraftMode(string(s.Draft)); err != nil {
			return err
		}
	}
	return nil
}
