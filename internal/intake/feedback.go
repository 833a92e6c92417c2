package intake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Iteration from comments. A comment on a delivery's issue or pull
// request that mentions the handle (@baton), or a review of its pull
// request that requests changes, from someone who may push to the
// repository, sends the delivery back to implement with a review ref to
// that comment: the next agent reads it on GitHub, its text is never
// copied into a prompt. baton acknowledges a comment with 👀. Comments
// from anyone else are ignored, and the log says why.
//
// Each comment acts once, whichever server sees it first, by webhook
// (issue_comment, pull_request_review) or by the poller for sources whose
// comments no webhook brings: seeing one records it as queued, with its
// River job (queue.FeedbackArgs), in one transaction that only the first
// sighting commits. The job (WorkFeedback) asks GitHub who wrote it and
// hands it to its delivery (delivery.Service.Feedback), which takes it
// now or when the run or round in the way ends: one round per piece of
// feedback. A job whose process died is rescued by River and decides
// again; one that had handed its comment over finds it decided.

// DefaultHandle is what a comment mentions to ask baton for something.
const DefaultHandle = "@baton"

// CommentWebhookWindow is how long a comment or review webhook speaks for
// a source: while one arrived within it, the poller leaves the source's
// comments to webhooks.
const CommentWebhookWindow = 24 * time.Hour

// feedbackOverlap is how far before the last poll the next one reads, so
// a comment written while the poll ran is not missed.
const feedbackOverlap = time.Minute

// FeedbackResult says what a comment or review did.
type FeedbackResult struct {
	// Outcome is queued (its job acts on it), then applied, deferred,
	// ignored or failed; duplicate when it was seen before, or "" when it
	// does not ask baton for anything.
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason,omitempty"`
	DeliveryID string `json:"delivery_id,omitempty"`
}

// commentEvent is a comment or review as baton reads it, from a webhook
// or from the API.
type commentEvent struct {
	kind   string // issue_comment or review
	id     int64
	number int // the issue or pull request it is on
	author string
	bot    bool
	body   string
	url    string
	state  string // a review's state
}

// handle is the mention baton answers to.
func (s *Service) handle() string {
	if s.Handle == "" {
		return DefaultHandle
	}
	return s.Handle
}

// asks reports whether ev asks baton for something: a review requesting
// changes, or a comment that mentions the handle.
func (s *Service) asks(ev commentEvent) bool {
	if ev.kind == "review" {
		return strings.EqualFold(ev.state, "changes_requested")
	}
	return Mentions(ev.body, s.handle())
}

// Mentions reports whether body mentions handle ("@baton") as a word, any
// case: not inside a longer name (@batons, @baton-ci, x@baton.dev), not
// in a quoted line ("> …", so a reply quoting a request does not ask
// again), not in code (a fenced block or a `span`).
func Mentions(body, handle string) bool {
	handle = strings.ToLower(strings.TrimSpace(handle))
	if len(handle) < 2 {
		return false
	}
	fenced := false
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(trimmed, ">") {
			continue
		}
		if mentionedIn(withoutCodeSpans(line), handle) {
			return true
		}
	}
	return false
}

// withoutCodeSpans blanks `code spans` of a line.
func withoutCodeSpans(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			b.WriteRune(' ')
			continue
		}
		if in {
			b.WriteRune(' ')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mentionedIn finds handle in line as a word of its own.
func mentionedIn(line, handle string) bool {
	low := strings.ToLower(line)
	for i := 0; ; {
		j := strings.Index(low[i:], handle)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(handle)
		before, _ := utf8.DecodeLastRuneInString(low[:start])
		after, _ := utf8.DecodeRuneInString(low[end:])
		if (start == 0 || !nameRune(before) && before != '@' && before != '/') && (end == len(low) || !nameRune(after) && !trailingName(low[end:])) {
			return true
		}
		i = start + 1
	}
}

// nameRune is a rune GitHub logins and the words around them are made of.
func nameRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' }

// trailingName reports a handle continued as a domain or path
// ("@baton.dev", "@baton/team"), which is not the handle: a sentence's
// full stop or a slash followed by nothing name-like is.
func trailingName(rest string) bool {
	if rest == "" || (rest[0] != '.' && rest[0] != '/') {
		return false
	}
	next, _ := utf8.DecodeRuneInString(rest[1:])
	return nameRune(next)
}

// feedback records a comment or review of src's repository that asks
// baton for something, with the job that acts on it, unless it was
// recorded before: see the package notes above. An error is the
// database's and leaves nothing recorded, so a redelivery or the next
// poll records it.
func (s *Service) feedback(ctx context.Context, src *baton.Source, ev commentEvent) (FeedbackResult, error) {
	if !s.asks(ev) {
		return FeedbackResult{}, nil
	}
	log := s.log().With("source", src.ID, "comment", ev.url, "author", ev.author)
	switch {
	case strings.Contains(ev.body, forge.Marker):
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: "baton's own comment"}, nil
	case ev.bot:
		log.Info("intake: feedback ignored: " + ev.author + " is an App, and only people send deliveries back")
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: ev.author + " is an App"}, nil
	}
	now := s.now()
	fb := sqlstore.Feedback{Repo: src.Repo, Kind: ev.kind, ID: ev.id, Author: ev.author, URL: ev.url, State: sqlstore.FeedbackQueued, CreatedAt: now, UpdatedAt: now}
	fresh := false
	err := s.Deliveries.Queue.InTx(ctx, func(tx queue.Tx) error {
		var err error
		if fresh, err = tx.Store().CreateFeedback(ctx, fb); err != nil || !fresh {
			return err
		}
		return tx.Enqueue(ctx, queue.FeedbackArgs{Repo: strings.ToLower(fb.Repo), CommentKind: fb.Kind, CommentID: fb.ID})
	})
	switch {
	case err != nil:
		return FeedbackResult{}, err
	case !fresh:
		return FeedbackResult{Outcome: "duplicate", Reason: "already acted on"}, nil
	}
	return FeedbackResult{Outcome: sqlstore.FeedbackQueued, Reason: "to be acted on by its job"}, nil
}

// WorkFeedback is the queue's handler of feedback jobs: HandleFeedback.
func (s *Service) WorkFeedback(ctx context.Context, a queue.FeedbackArgs, job queue.Job) error {
	_, err := s.HandleFeedback(ctx, a, job)
	return err
}

// HandleFeedback acts on the comment or review a feedback job names, if
// it is still queued, and logs what became of it: ignored (its author may
// not push, its delivery is gone, closed or merged), applied to its
// delivery, or deferred until the delivery can take it. A rate limit on
// the source's host snoozes the job until it resets; any other failure
// of GitHub or the database fails the attempt, and River tries again; a
// failure of the job's last attempt records the comment as failed.
func (s *Service) HandleFeedback(ctx context.Context, a queue.FeedbackArgs, job queue.Job) (FeedbackResult, error) {
	fb, err := s.store().FindFeedback(ctx, a.Repo, a.CommentKind, a.CommentID)
	if baton.ErrorCode(err) == baton.NotFound {
		return FeedbackResult{}, nil
	}
	if err != nil {
		return FeedbackResult{}, err
	}
	if fb.State != sqlstore.FeedbackQueued {
		return FeedbackResult{Outcome: "duplicate", Reason: "already acted on: " + fb.State, DeliveryID: fb.DeliveryID}, nil
	}
	log := s.log().With("comment", fb.URL, "author", fb.Author)
	res, err := s.decideFeedback(ctx, *fb)
	if err != nil {
		var rl *github.RateLimitError
		switch {
		case errors.As(err, &rl):
			return FeedbackResult{}, &queue.SnoozeError{Until: rl.Reset, Err: err}
		case !job.Last():
			return FeedbackResult{}, err
		}
		res = FeedbackResult{Outcome: sqlstore.FeedbackFailed, Reason: fmt.Sprintf("not acted on after %d attempts: %s", job.Attempt, baton.ErrorMessage(err))}
		fb.State, fb.Reason, fb.UpdatedAt = res.Outcome, res.Reason, s.now()
		if rerr := s.store().UpdateFeedback(context.WithoutCancel(ctx), *fb); rerr != nil {
			err = errors.Join(err, rerr)
		}
		log.Warn("intake: feedback from " + fb.Author + " failed: " + res.Reason)
		return res, err
	}
	msg := fmt.Sprintf("intake: feedback from %s %s", fb.Author, res.Outcome)
	if res.Reason != "" {
		msg += ": " + res.Reason
	}
	log.Info(msg, "delivery", res.DeliveryID)
	return res, nil
}

// decideFeedback finds the comment's delivery, checks its author may push,
// acknowledges it and hands it to the delivery, which applies it or
// defers it. What ignores it is recorded here.
func (s *Service) decideFeedback(ctx context.Context, fb sqlstore.Feedback) (FeedbackResult, error) {
	ignore := func(deliveryID, why string) (FeedbackResult, error) {
		fb.State, fb.Reason, fb.DeliveryID, fb.UpdatedAt = sqlstore.FeedbackIgnored, why, deliveryID, s.now()
		return FeedbackResult{Outcome: fb.State, Reason: why, DeliveryID: deliveryID}, s.store().UpdateFeedback(ctx, fb)
	}
	src, err := s.store().FindSource(ctx, fb.Repo)
	if baton.ErrorCode(err) == baton.NotFound {
		return ignore("", "its source "+fb.Repo+" is gone")
	}
	if err != nil {
		return FeedbackResult{}, err
	}
	// A comment's and a review's page address name the issue or pull
	// request they are on.
	ref, err := issueOf(src, fb.URL)
	if err != nil {
		return ignore("", "its address names no issue or pull request of "+src.Repo)
	}
	d, err := s.deliveryOf(ctx, src, ref.Number)
	if err != nil {
		return FeedbackResult{}, err
	}
	if d == nil {
		return ignore("", fmt.Sprintf("#%d is no open delivery's issue or pull request", ref.Number))
	}
	c, repo, err := s.commentsClient(ctx, src)
	if err != nil {
		return FeedbackResult{}, err
	}
	perm, err := s.permission(ctx, c, repo, fb.Author)
	if err != nil {
		return FeedbackResult{}, s.noteLimit(src, err)
	}
	if !github.CanWrite(perm) {
		return ignore(d.ID, fmt.Sprintf("%s has %s access to %s, and only people who can push send a delivery back", fb.Author, perm, src.Repo))
	}
	if fit, why := delivery.FeedbackFits(*d); fit == delivery.FeedbackIgnored {
		return ignore(d.ID, why)
	}
	if fb.Kind == "issue_comment" {
		// 👀: seen, and taken. GitHub has no reactions on reviews.
		if err := c.React(ctx, repo, fb.ID, "eyes"); err != nil {
			s.log().Warn("intake: no 👀 on "+fb.URL+": "+baton.ErrorMessage(err), "source", src.ID)
		}
	}
	fb.DeliveryID = d.ID
	rec, _, err := s.Deliveries.Feedback(ctx, fb)
	if err != nil {
		return FeedbackResult{}, err
	}
	return FeedbackResult{Outcome: rec.State, Reason: rec.Reason, DeliveryID: rec.DeliveryID}, nil
}

// deliveryOf finds the open delivery whose request issue or work pull
// request is number in src's repository, nil when there is none.
func (s *Service) deliveryOf(ctx context.Context, src *baton.Source, number int) (*baton.Delivery, error) {
	ds, err := s.store().OpenDeliveriesOf(ctx, src.Repo)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		for _, r := range d.Refs {
			if r.Role == baton.RoleRequest && r.Type == "github_issue" || r.Role == baton.RoleWork && r.Type == "pr" {
				if ref, err := issueOf(src, r.URL); err == nil && ref.Number == number {
					return d, nil
				}
			}
		}
	}
	return nil, nil
}

// PollComments reads the comments and reviews of src's repository since
// the last poll and acts on those that ask baton for something, unless a
// comment webhook arrived for the source within CommentWebhookWindow. The
// first poll of a source only marks the time: comments written before
// baton watched are not acted on. Requests: one per 100 comments, plus
// one per open delivery with a pull request (a 304 when its reviews did
// not change).
func (s *Service) PollComments(ctx context.Context, ref string) error {
	src, err := s.store().FindSource(ctx, ref)
	if err != nil {
		return err
	}
	now := s.now()
	if src.Paused || now.Sub(src.CommentWebhookAt) < CommentWebhookWindow {
		return nil
	}
	if src.CommentsPolledAt.IsZero() {
		return s.store().SetCommentsPolled(ctx, src.ID, now)
	}
	c, repo, err := s.commentsClient(ctx, src)
	if err != nil {
		return err
	}
	since := src.CommentsPolledAt.Add(-feedbackOverlap)
	comments, err := c.RepoComments(ctx, repo, since)
	if err != nil {
		return s.noteLimit(src, err)
	}
	var errs []error
	for _, cm := range comments {
		if cm.CreatedAt.Before(since) {
			continue // edited since, written before: not a new request
		}
		ev := commentEvent{kind: "issue_comment", id: cm.ID, number: cm.Number, author: cm.Author, bot: strings.HasSuffix(cm.Author, "[bot]"), body: cm.Body, url: cm.URL}
		if _, err := s.feedback(ctx, src, ev); err != nil {
			errs = append(errs, err)
		}
	}
	ds, err := s.store().OpenDeliveriesOf(ctx, src.Repo)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, d := range ds {
		pr, ok := d.Ref(baton.RoleWork, "pr")
		if !ok {
			continue
		}
		pref, err := issueOf(src, pr.URL)
		if err != nil {
			continue
		}
		key := src.ID + "#" + fmt.Sprint(pref.Number)
		page, notModified, err := c.Reviews(ctx, repo, pref.Number, s.reviewCache(key))
		if err != nil {
			errs = append(errs, s.noteLimit(src, err))
			continue
		}
		s.cacheReviews(key, page)
		if notModified {
			continue
		}
		for _, rv := range page.Reviews {
			if rv.SubmittedAt.Before(since) {
				continue
			}
			ev := commentEvent{kind: "review", id: rv.ID, number: pref.Number, author: rv.Author, bot: strings.HasSuffix(rv.Author, "[bot]"), body: rv.Body, url: rv.URL, state: rv.State}
			if _, err := s.feedback(ctx, src, ev); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // read again from the same time next poll
	}
	return s.store().SetCommentsPolled(ctx, src.ID, now)
}

// commentsClient gives a client to read and act on src's comments with,
// none while GitHub's rate limit for its host lasts.
func (s *Service) commentsClient(ctx context.Context, src *baton.Source) (*github.Client, github.Repo, error) {
	if s.GitHub == nil {
		return nil, github.Repo{}, baton.Errorf(baton.Unavailable, "this server was started without GitHub access, so comments cannot be read")
	}
	repo, err := github.ParseRepo(src.Repo)
	if err != nil {
		return nil, repo, err
	}
	if until, ok := s.limitedUntil(host(src)); ok {
		return nil, repo, baton.WrapError(baton.Unavailable, &github.RateLimitError{Reset: until}, "GitHub's rate limit for %s resets at %s", host(src), until.Format(time.RFC3339))
	}
	c, err := s.GitHub(ctx, repo, src.APIURL)
	return c, repo, err
}

// noteLimit holds the host when err is a rate limit, and returns err,
// saying how long the host is held.
func (s *Service) noteLimit(src *baton.Source, err error) error {
	_, err = s.hold(host(src), err)
	return err
}

// permissionTTL is how long an author's permission is taken as read: a
// thread of comments costs one request per author, and a change of
// role counts within a minute.
const permissionTTL = time.Minute

type permission struct {
	perm string
	at   time.Time
}

// permission returns login's permission on repo, read at most once per
// permissionTTL.
func (s *Service) permission(ctx context.Context, c *github.Client, repo github.Repo, login string) (string, error) {
	key := strings.ToLower(repo.Host + "/" + repo.String() + "@" + login)
	now := s.now()
	s.mu.Lock()
	p, ok := s.perms[key]
	s.mu.Unlock()
	if ok && now.Sub(p.at) < permissionTTL {
		return p.perm, nil
	}
	perm, err := c.Permission(ctx, repo, login)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perms == nil {
		s.perms = map[string]permission{}
	}
	for k, old := range s.perms {
		if now.Sub(old.at) >= permissionTTL {
			delete(s.perms, k)
		}
	}
	s.perms[key] = permission{perm, now}
	return perm, nil
}

func (s *Service) reviewCache(key string) *github.ReviewPage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reviews[key]
}

func (s *Service) cacheReviews(key string, p *github.ReviewPage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reviews == nil {
		s.reviews = map[string]*github.ReviewPage{}
	}
	s.reviews[key] = p
}
