// Package intake turns GitHub issues into deliveries. A source is a
// repository and a label: its open issues with the label become
// deliveries, polled with every page read (ETags make unchanged pages
// free) and told by webhooks (issues labeled, unlabeled, closed,
// reopened). A delivery a source created is closed only when its issue is
// closed or loses the label, seen in an event or in a complete listing:
// a listing that failed part of the way never closes anything.
//
// The CLI (`baton source`) and the HTTP server call the same methods.
package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Service manages sources and brings their issues in.
type Service struct {
	Deliveries *delivery.Service
	// GitHub opens the API for a repository; apiURL overrides the base
	// URL ("" for the repository's host).
	GitHub func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error)
	// CheckAPIURL says whether a source of repo may be read through
	// apiURL. Only the CLI, run by the machine's owner, sets it: a source's
	// API URL is where its host's token goes, so a request can never set
	// one (nil refuses any).
	CheckAPIURL func(repo github.Repo, apiURL string) error
	// WebhookSecret verifies webhooks of sources without a secret of
	// their own.
	WebhookSecret string
	// Handle is what a comment mentions to send a delivery back
	// (DefaultHandle when empty).
	Handle string
	Now    func() time.Time
	Log    *slog.Logger

	mu sync.Mutex
	// limited holds, per API host, when its rate limit resets: sources on
	// the same host share a token, so one limited source holds them all.
	limited map[string]time.Time
	// secondary counts, per API host, the secondary rate limits in a row
	// that named no time to wait: each waits longer (github.SecondaryWait).
	secondary map[string]int
	// reviews holds each pull request's reviews as last read, for ETags.
	reviews map[string]*github.ReviewPage
	// perms holds people's permissions as read lately (permission).
	perms map[string]permission
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Service) store() *sqlstore.Store { return s.Deliveries.Store() }

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Settings are how intake runs, editable from the dashboard.
type Settings struct {
	// Polling turns the poller on; webhooks work either way.
	Polling bool `json:"polling"`
	// PollEvery is the time between two syncs of a source.
	PollEvery time.Duration `json:"poll_every"`
}

// Settings defaults and bounds.
const (
	DefaultPollEvery = time.Minute
	MinPollEvery     = 10 * time.Second
	settingsName     = "intake"
)

// Settings returns the intake settings.
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	st := Settings{Polling: true, PollEvery: DefaultPollEvery}
	if _, err := s.store().Setting(ctx, settingsName, &st); err != nil {
		return st, err
	}
	return st, nil
}

// SettingsUpdate changes the fields it sets.
type SettingsUpdate struct {
	Polling   *bool
	PollEvery *time.Duration
}

// UpdateSettings applies u. Invalid for a poll interval under
// MinPollEvery.
func (s *Service) UpdateSettings(ctx context.Context, u SettingsUpdate) (Settings, error) {
	st, err := s.Settings(ctx)
	if err != nil {
		return st, err
	}
	if u.Polling != nil {
		st.Polling = *u.Polling
	}
	if u.PollEvery != nil {
		if *u.PollEvery < MinPollEvery || *u.PollEvery > 24*time.Hour {
			return st, baton.Errorf(baton.Invalid, "poll interval %s: want %s to 24h", *u.PollEvery, MinPollEvery)
		}
		st.PollEvery = *u.PollEvery
	}
	return st, s.store().PutSetting(ctx, settingsName, st, s.now())
}

// SourceInput is what a person sets on a source; nil fields are left
// alone on update (and defaulted on add).
type SourceInput struct {
	Repo          string
	APIURL        *string
	Label         *string
	Endpoint      *string
	Checkpoints   *[]string
	Agent         *string
	Draft         *string
	Paused        *bool
	WebhookSecret *string
	// AllowCommandAgent lets Agent be a command:<argv> agent. The CLI, run
	// by the machine's owner, sets it; the HTTP API never does, so a
	// request can never choose a command to run.
	AllowCommandAgent bool
	// Notify replaces where the source's deliveries are announced (empty
	// fields send nothing there). Only the CLI may set it
	// (AllowNotify): a request never chooses where baton's news goes.
	Notify      *baton.Notify
	AllowNotify bool
	// Setup replaces the set-up of the source's deliveries (no commands:
	// none). Only the CLI may set it (AllowSetup): its commands run on
	// the server, so a request never chooses them.
	Setup      *baton.SourceSetup
	AllowSetup bool
}

// Add creates a source. Invalid for a bad repository, label, phase or
// agent; Conflict when the repository has one.
func (s *Service) Add(ctx context.Context, in SourceInput) (*baton.Source, error) {
	if err := baton.CheckSize("the repository", in.Repo, baton.MaxName); err != nil {
		return nil, err
	}
	repo, err := github.ParseRepo(strings.TrimSpace(in.Repo))
	if err != nil {
		return nil, err
	}
	if err := s.Deliveries.GitHubHosts.Check(repo.Host); err != nil {
		return nil, err
	}
	now := s.now()
	src := &baton.Source{Repo: repoName(repo), Label: baton.DefaultSourceLabel, CreatedAt: now, UpdatedAt: now}
	src.ID = sourceID(src.Repo)
	if err := apply(src, in, s.CheckAPIURL); err != nil {
		return nil, err
	}
	if err := s.store().CreateSource(ctx, src); err != nil {
		return nil, err
	}
	return src, nil
}

// Update changes a source (named by id or repository).
func (s *Service) Update(ctx context.Context, ref string, in SourceInput) (*baton.Source, error) {
	src, err := s.store().FindSource(ctx, ref)
	if err != nil {
		return nil, err
	}
	oldLabel := src.Label
	if err := apply(src, in, s.CheckAPIURL); err != nil {
		return nil, err
	}
	if src.Label != oldLabel {
		src.Listing = "" // a listing of another label
	}
	src.UpdatedAt = s.now()
	return src, s.store().UpdateSource(ctx, src)
}

// Remove deletes a source; its deliveries stay.
func (s *Service) Remove(ctx context.Context, ref string) error {
	src, err := s.store().FindSource(ctx, ref)
	if err != nil {
		return err
	}
	return s.store().DeleteSource(ctx, src.ID)
}

// List returns every source.
func (s *Service) List(ctx context.Context) ([]*baton.Source, error) { return s.store().Sources(ctx) }

// Get returns a source by id or repository.
func (s *Service) Get(ctx context.Context, ref string) (*baton.Source, error) {
	return s.store().FindSource(ctx, ref)
}

// ErrAPIURLNotSettable is the cause of the error for an API URL set where
// only the server's owner may set one.
var ErrAPIURLNotSettable = errors.New("a source's API URL is set on the server only")

// apply sets in on src. checkAPIURL vets an API URL; nil refuses any.
func apply(src *baton.Source, in SourceInput, checkAPIURL func(github.Repo, string) error) error {
	if err := in.checkSizes(); err != nil {
		return err
	}
	if in.APIURL != nil {
		u := strings.TrimSpace(*in.APIURL)
		if u != "" {
			if checkAPIURL == nil {
				return baton.WrapError(baton.Invalid, ErrAPIURLNotSettable,
					"a source's API URL can only be set on the server, with `baton source add --api-url`: it is where the repository's token is sent")
			}
			repo, err := github.ParseRepo(src.Repo)
			if err != nil {
				return err
			}
			if err := checkAPIURL(repo, u); err != nil {
				return err
			}
		}
		src.APIURL = u
	}
	if in.Label != nil {
		src.Label = strings.TrimSpace(*in.Label)
		if src.Label == "" {
			src.Label = baton.DefaultSourceLabel
		}
	}
	if in.Endpoint != nil {
		src.Endpoint = ""
		if e := strings.TrimSpace(*in.Endpoint); e != "" {
			p, err := baton.ParsePhase(e)
			if err != nil {
				return err
			}
			src.Endpoint = p
		}
	}
	if in.Checkpoints != nil {
		src.Checkpoints = nil
		if len(*in.Checkpoints) > 0 {
			cps, err := baton.ParseCheckpoints(strings.Join(*in.Checkpoints, ","))
			if err != nil {
				return err
			}
			src.Checkpoints = cps
		}
	}
	if in.Agent != nil {
		a := strings.TrimSpace(*in.Agent)
		if a != "" {
			if strings.HasPrefix(a, "command:") && !in.AllowCommandAgent {
				return baton.Errorf(baton.Invalid, "a command agent can only be set from the command line (`baton source add --agent command:...`): the API chooses among claude, codex and droid")
			}
			if _, err := agentrun.Command(agentrun.Spec{Agent: a, Prompt: "-"}); err != nil {
				return err
			}
		}
		src.Agent = a
	}
	if in.Draft != nil {
		src.Draft = ""
		if d := strings.TrimSpace(*in.Draft); d != "" {
			m, err := baton.ParseDraftMode(d)
			if err != nil {
				return err
			}
			src.Draft = m
		}
	}
	if in.Paused != nil {
		src.Paused = *in.Paused
	}
	if in.Notify != nil {
		if !in.AllowNotify {
			return baton.Errorf(baton.Invalid, "a source's notification targets are set on the server only, with `baton source add --notify-webhook` or `--notify-slack-url-file`: they say where baton's news goes")
		}
		n := *in.Notify
		if n.WebhookURL != "" {
			if err := baton.CheckTargetURL("the notification webhook URL", n.WebhookURL); err != nil {
				return err
			}
		}
		if n.SlackURL != "" {
			if err := baton.CheckTargetURL("the Slack webhook URL", n.SlackURL); err != nil {
				return err
			}
		}
		if n.WebhookSecret != "" && n.WebhookURL == "" {
			return baton.Errorf(baton.Invalid, "a notification webhook secret needs a webhook URL (--notify-webhook)")
		}
		src.Notify = n
	}
	if in.WebhookSecret != nil {
		src.WebhookSecret = *in.WebhookSecret
	}
	if in.Setup != nil {
		if !in.AllowSetup {
			return baton.Errorf(baton.Invalid, "a source's set-up is set on the server only, with `baton source set %s --setup CMD`: its commands run there", src.Repo)
		}
		if err := checkSourceSetup(*in.Setup); err != nil {
			return err
		}
		src.Setup = *in.Setup
	}
	return src.Validate()
}

// checkSourceSetup checks a source's set-up as a repository's is
// checked: the commands, the files and what the set-up may reach. Files
// or hosts without commands name no set-up: refused, not dropped.
func checkSourceSetup(su baton.SourceSetup) error {
	if su.IsZero() && (len(su.Files) > 0 || len(su.EgressAllow) > 0) {
		return baton.Errorf(baton.Invalid, "a set-up needs its commands (--setup CMD) besides the files that run it again and the hosts it may reach")
	}
	if err := delivery.CheckSetup(su.Commands); err != nil {
		return baton.WrapError(baton.Invalid, err, "bad set-up")
	}
	if err := delivery.CheckSetupFiles(su.Files); err != nil {
		return baton.WrapError(baton.Invalid, err, "bad set-up file")
	}
	if _, err := netpolicy.Parse(su.EgressAllow...); err != nil {
		return baton.WrapError(baton.Invalid, err, "bad set-up egress")
	}
	return nil
}

// checkSizes applies the caps on a source's free text.
func (in SourceInput) checkSizes() error {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	fields := []struct {
		what, v string
		max     int
	}{
		{"the API URL", str(in.APIURL), baton.MaxURL},
		{"the label", str(in.Label), baton.MaxName},
		{"the endpoint", str(in.Endpoint), baton.MaxName},
		{"the draft setting", str(in.Draft), baton.MaxName},
		{"the agent", str(in.Agent), baton.MaxPath},
		{"the webhook secret", str(in.WebhookSecret), baton.MaxSecret},
	}
	if n := in.Notify; n != nil {
		fields = append(fields, []struct {
			what, v string
			max     int
		}{
			{"the notification webhook URL", n.WebhookURL, baton.MaxURL},
			{"the notification webhook secret", n.WebhookSecret, baton.MaxSecret},
			{"the Slack webhook URL", n.SlackURL, baton.MaxURL},
		}...)
	}
	if in.Checkpoints != nil {
		fields = append(fields, struct {
			what, v string
			max     int
		}{"the checkpoints", strings.Join(*in.Checkpoints, ","), baton.MaxName})
	}
	for _, f := range fields {
		if err := baton.CheckSize(f.what, f.v, f.max); err != nil {
			return err
		}
	}
	return nil
}

// repoName is how a source names its repository: owner/name, with the
// host first for GitHub Enterprise Server.
func repoName(r github.Repo) string {
	if r.Host != "" && r.Host != github.DefaultHost {
		return r.Host + "/" + r.String()
	}
	return r.String()
}

func sourceID(repo string) string { return baton.DeliveryID("source", strings.ToLower(repo))[:8] }

// listedIssue is what the cached listing keeps of an issue.
type listedIssue struct {
	Number int    `json:"n"`
	Title  string `json:"t"`
	URL    string `json:"u"`
}

type cachedPage struct {
	URL    string        `json:"url"`
	ETag   string        `json:"etag,omitempty"`
	Next   string        `json:"next,omitempty"`
	Issues []listedIssue `json:"issues"`
}

func decodeListing(s string) []github.IssuePage {
	var cps []cachedPage
	if s == "" || json.Unmarshal([]byte(s), &cps) != nil {
		return nil
	}
	out := make([]github.IssuePage, len(cps))
	for i, p := range cps {
		out[i] = github.IssuePage{URL: p.URL, ETag: p.ETag, Next: p.Next}
		for _, is := range p.Issues {
			out[i].Issues = append(out[i].Issues, github.Issue{Number: is.Number, Title: is.Title, URL: is.URL, State: "open"})
		}
	}
	return out
}

func encodeListing(pages []github.IssuePage) string {
	cps := make([]cachedPage, len(pages))
	for i, p := range pages {
		cps[i] = cachedPage{URL: p.URL, ETag: p.ETag, Next: p.Next, Issues: []listedIssue{}}
		for _, is := range p.Issues {
			cps[i].Issues = append(cps[i].Issues, listedIssue{is.Number, baton.Truncate(is.Title, 300, "…"), is.URL})
		}
	}
	b, _ := json.Marshal(cps)
	return string(b)
}

// host is the API host a source is read through, for rate limits.
func host(src *baton.Source) string {
	if src.APIURL != "" {
		return src.APIURL
	}
	r, err := github.ParseRepo(src.Repo)
	if err != nil || r.Host == "" {
		return github.DefaultHost
	}
	return r.Host
}

// limitedUntil returns when the host's rate limit resets, if it is in
// force.
func (s *Service) limitedUntil(h string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.limited[h]
	if ok && s.now().Before(t) {
		return t, true
	}
	return time.Time{}, false
}

// limit holds the host until rl resets; a secondary limit that named no
// time holds it a minute, then longer on each repeat, per GitHub's
// guidance. It returns when the host is free again.
func (s *Service) limit(h string, rl *github.RateLimitError) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limited == nil {
		s.limited, s.secondary = map[string]time.Time{}, map[string]int{}
	}
	until := rl.Reset
	if rl.Default {
		s.secondary[h]++
		until = s.now().Add(github.SecondaryWait(s.secondary[h]))
	}
	s.limited[h] = until
	return until
}

// hold holds the host when err is a rate limit, returning when the host
// is free again (zero for any other error). A secondary limit that named
// no time is held longer than GitHub's answer says (limit): the error
// returned then says the hold, so a log never reads "in 1m0s" for a host
// held two minutes.
func (s *Service) hold(h string, err error) (time.Time, error) {
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		return time.Time{}, err
	}
	until := s.limit(h, rl)
	if until.Equal(rl.Reset) {
		return until, err
	}
	held := &github.RateLimitError{Reset: until, Secondary: rl.Secondary, Default: rl.Default}
	return until, baton.WrapError(baton.Unavailable, held, "GitHub's secondary rate limit for %s named no time to wait: every source on it waits until %s (%s, longer each time it repeats)",
		h, until.UTC().Format(time.RFC3339), until.Sub(s.now()).Round(time.Second))
}

// unlimited records a complete read of the host: the next secondary
// limit is the first again.
func (s *Service) unlimited(h string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secondary, h)
}

// Sync reads every page of the source's open labelled issues now:
// issues without a delivery get one; tracked issues missing from the
// complete listing are closed or unlabelled, and their deliveries are
// closed. The sync status is stored with the source, errors included; a
// rate limit holds every source on the same host until it resets
// (Unavailable wrapping *github.RateLimitError).
func (s *Service) Sync(ctx context.Context, ref string) (*baton.Source, error) {
	src, err := s.store().FindSource(ctx, ref)
	if err != nil {
		return nil, err
	}
	err = s.sync(ctx, src)
	if serr := s.store().UpdateSource(context.WithoutCancel(ctx), src); serr != nil && err == nil {
		err = serr
	}
	return src, err
}

func (s *Service) sync(ctx context.Context, src *baton.Source) error {
	now := s.now()
	src.Sync.LastSyncAt = now
	h := host(src)
	if until, ok := s.limitedUntil(h); ok {
		src.Sync.RateLimitReset = until
		src.Sync.Error = fmt.Sprintf("GitHub's rate limit for %s resets at %s: syncing then", h, until.Format(time.RFC3339))
		return baton.WrapError(baton.Unavailable, &github.RateLimitError{Reset: until}, "%s", src.Sync.Error)
	}
	repo, err := github.ParseRepo(src.Repo)
	if err != nil {
		return err
	}
	if s.GitHub == nil {
		src.Sync.Error = "this server was started without GitHub access, so sources cannot sync"
		return baton.Errorf(baton.Unavailable, "%s", src.Sync.Error)
	}
	c, err := s.GitHub(ctx, repo, src.APIURL)
	if err != nil {
		src.Sync.Error = baton.ErrorMessage(err)
		return err
	}
	listing, err := c.ListIssuesCached(ctx, repo, github.IssueFilter{Labels: []string{src.Label}}, decodeListing(src.Listing))
	if err != nil {
		var until time.Time
		if until, err = s.hold(h, err); !until.IsZero() {
			src.Sync.RateLimitReset = until
		}
		src.Sync.Error = baton.ErrorMessage(err)
		return err
	}
	s.unlimited(h)
	res := baton.SyncResult{Requests: listing.Requests, NotModified: listing.NotModified}
	issues := listing.Issues()
	res.Open = len(issues)
	tracked, err := s.tracked(ctx, src.ID)
	if err != nil {
		src.Sync.Error = baton.ErrorMessage(err)
		return err
	}
	open := map[int]bool{}
	var errs []string
	for _, is := range issues {
		open[is.Number] = true
		if si, ok := tracked[is.Number]; ok && si.Open {
			continue
		}
		created, err := s.bring(ctx, src, is.Number, is.Title, is.URL)
		if err != nil {
			errs = append(errs, fmt.Sprintf("#%d: %s", is.Number, baton.ErrorMessage(err)))
			continue
		}
		if created {
			res.Created++
		}
	}
	// The listing is complete: a tracked issue missing from it was closed
	// or lost the label.
	for n, si := range tracked {
		if !si.Open || open[n] {
			continue
		}
		closed, err := s.withdraw(ctx, src, si, fmt.Sprintf("issue #%d is no longer open with label %q", n, src.Label))
		if err != nil {
			errs = append(errs, fmt.Sprintf("#%d: %s", n, baton.ErrorMessage(err)))
			continue
		}
		if closed {
			res.Closed++
		}
	}
	src.Listing = encodeListing(listing.Pages)
	src.Sync.Result, src.Sync.LastOKAt, src.Sync.RateLimitReset = res, s.now(), time.Time{}
	src.Sync.Error = strings.Join(errs, "; ")
	if len(errs) > 0 {
		return baton.Errorf(baton.Unavailable, "sync of %s: %s", src.Repo, src.Sync.Error)
	}
	return nil
}

func (s *Service) tracked(ctx context.Context, id string) (map[int]sqlstore.SourceIssue, error) {
	list, err := s.store().SourceIssues(ctx, id, false)
	if err != nil {
		return nil, err
	}
	m := map[int]sqlstore.SourceIssue{}
	for _, si := range list {
		m[si.Number] = si
	}
	return m, nil
}

// bring makes (or finds) the delivery of an issue of src's repository
// and tracks it.
func (s *Service) bring(ctx context.Context, src *baton.Source, n int, title, url string) (bool, error) {
	ref, err := issueOf(src, url)
	if err != nil {
		return false, err
	}
	if ref.Number != n {
		return false, baton.WrapError(baton.Invalid, ErrForeignIssue, "issue #%d has the URL %s: refused", n, ref.URL())
	}
	req := delivery.Request{IssueURL: ref.URL(), Summary: fmt.Sprintf("GitHub Issue #%d: %s", n, title), Actor: "intake:" + src.Repo}
	if src.Agent != "" {
		a := src.Agent
		req.Settings.Agent = &a
	}
	if src.Endpoint != "" {
		e := src.Endpoint
		req.Settings.Endpoint = &e
	}
	if src.Checkpoints != nil {
		cps := append([]baton.Phase{}, src.Checkpoints...)
		req.Settings.Checkpoints = &cps
	}
	if src.Draft != "" {
		m := src.Draft
		req.Settings.Draft = &m
	}
	d, created, err := s.Deliveries.Create(ctx, req)
	if err != nil {
		return false, err
	}
	if err := s.store().PutSourceIssue(ctx, sqlstore.SourceIssue{SourceID: src.ID, Number: n, DeliveryID: d.ID, Open: true}, s.now()); err != nil {
		return false, err
	}
	if created {
		s.log().Info(fmt.Sprintf("intake: delivery %s for %s#%d", d.ID, src.Repo, n), "source", src.ID, "delivery", d.ID, "issue", n)
	}
	return created, nil
}

// withdraw closes the delivery of an issue that was closed or
// unlabelled: a running phase is canceled first. A delivery already
// closed, or past deploy (its change landed; observe finishes), is left
// alone. The issue stops being tracked as open either way.
func (s *Service) withdraw(ctx context.Context, src *baton.Source, si sqlstore.SourceIssue, why string) (bool, error) {
	si.Open = false
	d, err := s.Deliveries.Current(ctx, si.DeliveryID)
	if baton.ErrorCode(err) == baton.NotFound {
		return false, s.store().PutSourceIssue(ctx, si, s.now())
	}
	if err != nil {
		return false, err
	}
	closed := false
	if d.Phase != baton.PhaseClose && d.Phase != baton.PhaseObserve {
		who := "intake:" + src.Repo
		if d.RunStatus == baton.StatusRunning {
			if _, err := s.Deliveries.Decide(ctx, d.ID, delivery.ActCancel, who, why); err != nil && baton.ErrorCode(err) != baton.Conflict {
				return false, err
			}
		}
		if _, err := s.Deliveries.Decide(ctx, d.ID, delivery.ActClose, who, why); err != nil {
			return false, err
		}
		closed = true
		s.log().Info(fmt.Sprintf("intake: delivery %s closed: %s", d.ID, why), "source", src.ID, "delivery", d.ID, "issue", si.Number)
	}
	return closed, s.store().PutSourceIssue(ctx, si, s.now())
}

// Run syncs sources as they fall due until ctx ends: every PollEvery of
// the settings, never a source whose host's rate limit is in force, never
// a paused one; with each sync it reads the source's new comments and
// reviews (PollComments). It looks every tick (default 5s), so changed
// settings apply without a restart. Polling is not durable work: a poll
// missed is the next one; what a poll finds (a delivery, a comment to
// act on) is recorded with its job in one transaction.
func (s *Service) Run(ctx context.Context, tick time.Duration) error {
	if tick <= 0 {
		tick = 5 * time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		s.pollDue(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Service) pollDue(ctx context.Context) {
	st, err := s.Settings(ctx)
	if err != nil || !st.Polling {
		return
	}
	srcs, err := s.List(ctx)
	if err != nil {
		return
	}
	for _, src := range srcs {
		if ctx.Err() != nil {
			return
		}
		if src.Paused || s.now().Sub(src.Sync.LastSyncAt) < st.PollEvery {
			continue
		}
		if _, limited := s.limitedUntil(host(src)); limited && !src.Sync.LastSyncAt.IsZero() {
			continue
		}
		if _, err := s.Sync(ctx, src.ID); err != nil && ctx.Err() == nil {
			s.log().Warn("intake: sync of "+src.Repo+": "+baton.ErrorMessage(err), "source", src.ID)
		}
		if err := s.PollComments(ctx, src.ID); err != nil && ctx.Err() == nil {
			s.log().Warn("intake: comments of "+src.Repo+": "+baton.ErrorMessage(err), "source", src.ID)
		}
	}
}
