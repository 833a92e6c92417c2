package intake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Iteration from comments. A comment on a delivery's issue or pull
// request that mentions the handle (@baton), or a review of its pull
// request that requests changes, from someone who may push to the
// repository, sends the delivery back to implement with a review ref to
// that comment: the next agent reads it on GitHub, its text is never
// copied into a prompt. baton acknowledges a comment with 👀. Comments
// from anyone else are ignored, and the log says why. Each comment acts
// once, whichever server sees it first, by webhook (issue_comment,
// pull_request_review) or by the poller for sources whose comments no
// webhook brings. What the delivery does with it depends on where it is
// (delivery.FeedbackFits): one that is running, or has an implement round
// queued, takes it when that ends, one round per piece of feedback.

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
	// Outcome is applied, deferred, ignored, duplicate (acted on before)
	// or "" when it does not ask baton for anything.
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

// feedback acts on a comment or review of src's repository, seen through
// c: see the package notes above. An error is GitHub's or the database's
// and leaves nothing recorded, so a redelivery or the next poll retries.
func (s *Service) feedback(ctx context.Context, src *baton.Source, c *github.Client, ev commentEvent) (FeedbackResult, error) {
	if !s.asks(ev) {
		return FeedbackResult{}, nil
	}
	log := s.log().With("source", src.ID, "comment", ev.url, "author", ev.author)
	switch {
	case strings.Contains(ev.body, forge.Marker):
		return FeedbackResult{Outcome: "ignored", Reason: "baton's own comment"}, nil
	case ev.bot:
		log.Info("intake: feedback ignored: " + ev.author + " is an App, and only people send deliveries back")
		return FeedbackResult{Outcome: "ignored", Reason: ev.author + " is an App"}, nil
	}
	now := s.now()
	fb := sqlstore.Feedback{Repo: src.Repo, Kind: ev.kind, ID: ev.id, Author: ev.author, URL: ev.url, State: sqlstore.FeedbackClaimed, CreatedAt: now, UpdatedAt: now}
	fresh, err := s.store().ClaimFeedback(ctx, fb)
	if err != nil {
		return FeedbackResult{}, err
	}
	if !fresh {
		return FeedbackResult{Outcome: "duplicate", Reason: "already acted on"}, nil
	}
	res, err := s.decideClaimed(ctx, src, c, ev, &fb)
	if err != nil {
		// Forget the claim: the comment is acted on when it is seen again.
		if rerr := s.store().ReleaseFeedback(context.WithoutCancel(ctx), fb); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return FeedbackResult{}, err
	}
	return res, s.recordFeedback(ctx, log, fb, res)
}

// FeedbackLease is how long a claim on a comment holds. Acting on one is
// bounded by feedbackDecideTimeout, so a claim older than the lease was
// left by a process that stopped between claiming and recording:
// ResumeClaims takes it over.
const FeedbackLease = 15 * time.Minute

// feedbackDecideTimeout bounds acting on one comment: a few GitHub calls
// and a store write.
const feedbackDecideTimeout = 5 * time.Minute

// decideClaimed is decideFeedback for a comment this process holds the
// claim on, within feedbackDecideTimeout so the claim outlives it.
func (s *Service) decideClaimed(ctx context.Context, src *baton.Source, c *github.Client, ev commentEvent, fb *sqlstore.Feedback) (FeedbackResult, error) {
	ctx, cancel := context.WithTimeout(ctx, feedbackDecideTimeout)
	defer cancel()
	return s.decideFeedback(ctx, src, c, ev, fb)
}

// recordFeedback records what became of a claimed comment, and logs it.
func (s *Service) recordFeedback(ctx context.Context, log *slog.Logger, fb sqlstore.Feedback, res FeedbackResult) error {
	fb.State, fb.Reason, fb.DeliveryID, fb.UpdatedAt = res.Outcome, res.Reason, res.DeliveryID, s.now()
	if err := s.store().UpdateFeedback(context.WithoutCancel(ctx), fb); err != nil {
		return err
	}
	msg := fmt.Sprintf("intake: feedback from %s %s", fb.Author, res.Outcome)
	if res.Reason != "" {
		msg += ": " + res.Reason
	}
	log.Info(msg, "delivery", res.DeliveryID)
	return nil
}

// ResumeClaims acts on the comments whose claim outlived FeedbackLease:
// their process stopped after claiming them and before recording what
// became of them, and no webhook or poll brings a comment twice. Each is
// decided again from what the claim recorded (its author is asked for
// their access again); one its delivery already carries was applied
// before the stop and is only recorded. A claim that fails again is
// logged and retried after another lease; the error returned is the
// store's. The poller calls it every tick.
func (s *Service) ResumeClaims(ctx context.Context) error {
	list, err := s.store().FeedbackOf(ctx, sqlstore.FeedbackClaimed)
	if err != nil {
		return err
	}
	var errs []error
	for _, fb := range list {
		now := s.now()
		if now.Sub(fb.UpdatedAt) < FeedbackLease {
			continue
		}
		taken, err := s.store().RetakeFeedback(ctx, fb, now.Add(-FeedbackLease), now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !taken {
			continue // another process took it over first
		}
		log := s.log().With("comment", fb.URL, "author", fb.Author)
		res, err := s.resumeClaim(ctx, fb)
		if err != nil {
			// Said here, with the comment it is about; not returned too.
			log.Warn("intake: feedback left by a stopped process: " + baton.ErrorMessage(err) + "; tried again in " + FeedbackLease.String())
			continue
		}
		res.Reason = cmp.Or(res.Reason, "resumed after its process stopped")
		if err := s.recordFeedback(ctx, log, fb, res); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resumeClaim decides a comment whose claim was taken over.
func (s *Service) resumeClaim(ctx context.Context, fb sqlstore.Feedback) (FeedbackResult, error) {
	src, err := s.store().FindSource(ctx, fb.Repo)
	if baton.ErrorCode(err) == baton.NotFound {
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: "its source " + fb.Repo + " is gone"}, nil
	}
	if err != nil {
		return FeedbackResult{}, err
	}
	// A comment's and a review's page address name the issue or pull
	// request they are on.
	ref, err := issueOf(src, fb.URL)
	if err != nil {
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: "its address names no issue or pull request of " + src.Repo}, nil
	}
	d, err := s.deliveryOf(ctx, src, ref.Number)
	if err != nil {
		return FeedbackResult{}, err
	}
	if d != nil && carries(d, fb.URL) {
		return FeedbackResult{Outcome: sqlstore.FeedbackApplied, Reason: "applied before its process stopped", DeliveryID: d.ID}, nil
	}
	c, _, err := s.commentsClient(ctx, src)
	if err != nil {
		return FeedbackResult{}, err
	}
	ev := commentEvent{kind: fb.Kind, id: fb.ID, number: ref.Number, author: fb.Author, url: fb.URL}
	res, err := s.decideClaimed(ctx, src, c, ev, &fb)
	if err != nil {
		return FeedbackResult{}, s.noteLimit(src, err)
	}
	return res, nil
}

// carries says whether d holds a review ref to the comment at url: the
// comment was applied to it.
func carries(d *baton.Delivery, url string) bool {
	for _, r := range d.Refs {
		if r.Role == baton.RoleReview && r.URL == url {
			return true
		}
	}
	return false
}

// decideFeedback finds the comment's delivery, checks its author may push,
// acknowledges it and applies it or defers it.
func (s *Service) decideFeedback(ctx context.Context, src *baton.Source, c *github.Client, ev commentEvent, fb *sqlstore.Feedback) (FeedbackResult, error) {
	repo, err := github.ParseRepo(src.Repo)
	if err != nil {
		return FeedbackResult{}, err
	}
	d, err := s.deliveryOf(ctx, src, ev.number)
	if err != nil {
		return FeedbackResult{}, err
	}
	if d == nil {
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: fmt.Sprintf("#%d is no open delivery's issue or pull request", ev.number)}, nil
	}
	fb.DeliveryID = d.ID
	perm, err := s.permission(ctx, c, repo, ev.author)
	if err != nil {
		return FeedbackResult{}, err
	}
	if !github.CanWrite(perm) {
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, DeliveryID: d.ID,
			Reason: fmt.Sprintf("%s has %s access to %s, and only people who can push send a delivery back", ev.author, perm, src.Repo)}, nil
	}
	fit, why := delivery.FeedbackFits(*d)
	if fit == delivery.FeedbackIgnored {
		return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: why, DeliveryID: d.ID}, nil
	}
	if ev.kind == "issue_comment" {
		// 👀: seen, and taken. GitHub has no reactions on reviews.
		if err := c.React(ctx, repo, ev.id, "eyes"); err != nil {
			s.log().Warn("intake: no 👀 on "+ev.url+": "+baton.ErrorMessage(err), "source", src.ID)
		}
	}
	if fit == delivery.FeedbackWaits {
		return FeedbackResult{Outcome: sqlstore.FeedbackDeferred, Reason: why, DeliveryID: d.ID}, nil
	}
	return s.applyFeedback(ctx, d.ID, *fb)
}

// applyFeedback sends the delivery back for fb, or defers it when the
// delivery moved on meanwhile.
func (s *Service) applyFeedback(ctx context.Context, id string, fb sqlstore.Feedback) (FeedbackResult, error) {
	label := "comment by @" + fb.Author
	typ := "github_comment"
	if fb.Kind == "review" {
		label, typ = "changes requested by @"+fb.Author, "github_review"
	}
	ref := baton.Ref{Role: baton.RoleReview, Type: typ, Label: label, URL: fb.URL}
	d, err := s.Deliveries.Feedback(ctx, id, ref, "github:"+fb.Author)
	if baton.ErrorCode(err) == baton.Conflict {
		cur, cerr := s.Deliveries.Current(ctx, id)
		if cerr != nil {
			return FeedbackResult{}, cerr
		}
		fit, why := delivery.FeedbackFits(*cur)
		if fit == delivery.FeedbackIgnored {
			return FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: why, DeliveryID: id}, nil
		}
		return FeedbackResult{Outcome: sqlstore.FeedbackDeferred, Reason: why, DeliveryID: id}, nil
	}
	if err != nil {
		return FeedbackResult{}, err
	}
	return FeedbackResult{Outcome: sqlstore.FeedbackApplied, Reason: fmt.Sprintf("delivery %s is %s", d.ID, d.String()), DeliveryID: d.ID}, nil
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

// ApplyDeferred applies the feedback that waited for its delivery, oldest
// first, where the delivery can now take it (one round per piece); the
// rest waits on. The poller calls it every tick.
func (s *Service) ApplyDeferred(ctx context.Context) error {
	list, err := s.store().FeedbackOf(ctx, sqlstore.FeedbackDeferred)
	if err != nil {
		return err
	}
	var errs []error
	for _, fb := range list {
		d, err := s.Deliveries.Current(ctx, fb.DeliveryID)
		var res FeedbackResult
		switch {
		case baton.ErrorCode(err) == baton.NotFound:
			res = FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: "delivery " + fb.DeliveryID + " is gone"}
		case err != nil:
			errs = append(errs, err)
			continue
		default:
			fit, why := delivery.FeedbackFits(*d)
			switch fit {
			case delivery.FeedbackWaits:
				continue
			case delivery.FeedbackIgnored:
				res = FeedbackResult{Outcome: sqlstore.FeedbackIgnored, Reason: why, DeliveryID: d.ID}
			default:
				if res, err = s.applyFeedback(ctx, d.ID, fb); err != nil {
					errs = append(errs, err)
					continue
				}
				if res.Outcome == sqlstore.FeedbackDeferred {
					continue
				}
			}
		}
		fb.State, fb.Reason, fb.UpdatedAt = res.Outcome, res.Reason, s.now()
		if err := s.store().UpdateFeedback(ctx, fb); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log().Info(fmt.Sprintf("intake: waiting feedback from %s %s: %s", fb.Author, res.Outcome, res.Reason), "comment", fb.URL, "delivery", fb.DeliveryID)
	}
	return errors.Join(errs...)
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
		if _, err := s.feedback(ctx, src, c, ev); err != nil {
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
			if _, err := s.feedback(ctx, src, c, ev); err != nil {
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
