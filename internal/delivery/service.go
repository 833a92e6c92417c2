package delivery

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/diskspace"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Service is the delivery pipeline's core, shared by every edge (the
// CLI, the HTTP server, the MCP server): it creates deliveries, applies
// people's actions, runs phases (Runner, Worker) and reads deliveries
// back. Each change, its phase log entries and the job it causes are
// written in one transaction, conditional on the delivery's version, so
// two actors racing on one delivery cannot both succeed.
type Service struct {
	Queue *queue.Queue
	// DataDir holds the repository caches, worktrees, run logs, review
	// notes and command outputs.
	DataDir string
	// Forge returns the forge of a delivery: where its work lands. nil
	// serves local repositories only.
	Forge func(ctx context.Context, d *baton.Delivery) (forge.Forge, error)
	// GitHub opens the GitHub API for a repository, to read the issue a
	// delivery is created from. nil means issues cannot be read, so a
	// request from an issue needs a summary.
	GitHub func(ctx context.Context, repo github.Repo) (*github.Client, error)
	// GitHubHosts are the GitHub hosts deliveries may come from: an issue
	// on another host is refused when it is created, as baton has no
	// token for it (the zero value: github.com only).
	GitHubHosts github.Hosts
	// DefaultAgent runs deliveries that name no agent (default
	// baton.DefaultAgent).
	DefaultAgent string
	// PublicURL is where people reach the server's dashboard
	// (--public-url): phases published on a pull request link to the
	// delivery's page there. "" links nowhere.
	PublicURL string
	// Sandbox confines agents and the verify, deploy and observe commands
	// (which run code an agent wrote): its Mode, and what its Policy adds
	// to each phase's own (the worktree, its git files). Nothing of
	// DataDir is reachable beyond a phase's worktree. The zero value
	// confines where the kernel can.
	Sandbox sandbox.Confinement
	// LiveBacklog is how many messages of an agent's live output may wait
	// for the database before more are counted and dropped (0:
	// DefaultLiveBacklog).
	LiveBacklog int
	// AgentEnv is added to the environment of agents and of set-up,
	// verify, deploy and observe commands, over baton's own without its
	// secrets; where an agent's program is looked for (its PATH) too.
	// nil in a server: they start from baton's environment.
	AgentEnv []string
	Now      func() time.Time

	wsOnce sync.Once
	ws     *forge.Workspaces

	spaceOnce sync.Once
	space     *diskspace.Reserve

	// listeners are told when events commit in this process (OnEvents).
	listeners listeners
	// deciding serialises people's decisions on one delivery in this
	// process (lockDecision).
	deciding keyLocks
}

// notesDir holds d's review notes, which its refs point agents at.
func (s *Service) notesDir(d *baton.Delivery) string {
	return filepath.Join(s.DataDir, "notes", d.ID)
}

// Close closes the service's database.
func (s *Service) Close() { s.Queue.Close() }

// forge returns the forge of d.
func (s *Service) forge(ctx context.Context, d *baton.Delivery) (forge.Forge, error) {
	if s.Forge != nil {
		return s.Forge(ctx, d)
	}
	if d.Forge == baton.ForgeLocal {
		return forge.Local{}, nil
	}
	return nil, baton.Errorf(baton.Unavailable, "no access to %s is configured for delivery %s", d.Forge, d.ID)
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// Workspaces returns the service's repository caches and worktrees.
func (s *Service) Workspaces() *forge.Workspaces {
	s.wsOnce.Do(func() { s.ws = &forge.Workspaces{Dir: s.DataDir, Sandbox: s.Sandbox.Mode} })
	return s.ws
}

// Tidy deletes the worktrees and cache branches of deliveries that need
// them no more (deployed, closed, or gone; a person may close a delivery
// from anywhere) and runs git's maintenance on the caches.
func (s *Service) Tidy(ctx context.Context) error {
	st := s.Store()
	return s.Workspaces().Tidy(ctx, func(id string) bool {
		d, err := st.FindDeliveryByID(ctx, id)
		if baton.ErrorCode(err) == baton.NotFound {
			return false
		}
		return err != nil || !workDone(d) // when in doubt, keep
	})
}

// commit writes res over before in tx: the delivery (conditional on
// before's version), the log entries in order, the notice it makes for
// people (queueNotice), and the job. A change that leaves the delivery
// able to take feedback applies the oldest that waited for it
// (applyWaitingFeedback), in the same transaction.
func commit(ctx context.Context, tx queue.Tx, before *baton.Delivery, res Result) (*baton.Delivery, error) {
	d := res.Delivery
	d.Version = before.Version
	if err := tx.Store().UpdateDelivery(ctx, &d); err != nil {
		return nil, err
	}
	if err := logChange(ctx, tx, d.ID, res.Log); err != nil {
		return nil, err
	}
	if err := queueNotice(ctx, tx, before, &d, res.Log); err != nil {
		return nil, err
	}
	if res.Enqueue {
		if err := tx.Enqueue(ctx, queue.RunPhaseArgs{DeliveryID: d.ID, Phase: d.Phase, Entry: d.Version}); err != nil {
			return nil, err
		}
	}
	return applyWaitingFeedback(ctx, tx, &d)
}

// logChange appends a change's phase log entries and their events.
func logChange(ctx context.Context, tx queue.Tx, id string, log []baton.PhaseLogEntry) error {
	for i := range log {
		if err := tx.Store().AppendPhaseLog(ctx, id, &log[i]); err != nil {
			return err
		}
	}
	return tx.Store().AppendEvents(ctx, id, phaseEvents(log))
}

// Insert stores d, a delivery already assembled and valid, created by
// actor, with plan queued; or, when the same repository and request
// already have a delivery, returns that one unchanged (created=false).
// Create assembles a delivery from a Request and inserts it.
func (s *Service) Insert(ctx context.Context, d baton.Delivery, actor string) (*baton.Delivery, bool, error) {
	res := NewDelivery(d, actor, s.now())
	var got *baton.Delivery
	var created bool
	err := s.Queue.InTx(ctx, func(tx queue.Tx) error {
		var err error
		got, created, err = tx.Store().CreateDelivery(ctx, &res.Delivery)
		if err != nil || !created {
			return err
		}
		if err := logChange(ctx, tx, got.ID, res.Log); err != nil {
			return err
		}
		if res.Enqueue {
			return tx.Enqueue(ctx, queue.RunPhaseArgs{DeliveryID: got.ID, Phase: got.Phase, Entry: got.Version})
		}
		return nil
	})
	if err == nil && created {
		s.notify(got.ID)
	}
	return got, created, err
}

// Resolve finds a delivery by id, by seq ("7" or "#7"), or by a unique id
// prefix of at least 4 characters.
func (s *Service) Resolve(ctx context.Context, ref string) (*baton.Delivery, error) {
	st := s.Queue.Store()
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, baton.Errorf(baton.Invalid, "no delivery named: pass an id or a number from `baton delivery list`")
	}
	if d, err := st.FindDeliveryByID(ctx, ref); err == nil || baton.ErrorCode(err) != baton.NotFound {
		return d, err
	}
	if n, err := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64); err == nil && n > 0 {
		if d, err := st.FindDeliveryBySeq(ctx, n); err == nil || baton.ErrorCode(err) != baton.NotFound {
			return d, err
		}
	}
	if len(ref) >= 4 && baton.ValidID(ref) {
		ds, err := st.FindDeliveriesByPrefix(ctx, ref)
		if err != nil {
			return nil, err
		}
		switch len(ds) {
		case 1:
			return ds[0], nil
		case 0:
		default:
			return nil, baton.Errorf(baton.Invalid, "%q names %d deliveries: give more of the id", ref, len(ds))
		}
	}
	return nil, baton.Errorf(baton.NotFound, "no delivery %q: `baton delivery list` shows them", ref)
}

// Act applies a person's action (approve, retry, cancel, close) to the
// delivery named ref.
func (s *Service) Act(ctx context.Context, ref string, in Input) (*baton.Delivery, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return s.act(ctx, d.ID, in, nil)
}

// act applies in to delivery id in one transaction; with a review, the
// review note it keeps (keepReview) is written in that transaction too,
// its refs added by the action, and its file once it commits.
func (s *Service) act(ctx context.Context, id string, in Input, review *forge.Review) (*baton.Delivery, error) {
	in.Now = s.now()
	var out *baton.Delivery
	var note *baton.ReviewNote
	err := s.Queue.InTx(ctx, func(tx queue.Tx) error {
		cur, err := tx.Store().FindDeliveryByID(ctx, id)
		if err != nil {
			return err
		}
		res, err := Apply(*cur, in)
		if err != nil {
			return err
		}
		if review != nil {
			var refs []baton.Ref
			if note, refs, err = s.keepReview(ctx, tx, cur, *review); err != nil {
				return err
			}
			with := in
			with.Refs = append(slices.Clone(in.Refs), refs...)
			if res, err = Apply(*cur, with); err != nil {
				return err
			}
		}
		if in.Action == ActCancel {
			// The running agent run ends as canceled now; the worker sees
			// the change within a poll and kills the agent, and its late
			// result is discarded.
			if _, err := tx.Store().EndRunningAgentRuns(ctx, cur.ID, baton.RunCanceled, res.Delivery.Error, in.Now); err != nil {
				return err
			}
		}
		out, err = commit(ctx, tx, cur, res)
		return err
	})
	if err != nil {
		return nil, err
	}
	if note != nil {
		// Best effort: the next agent phase writes it if this fails.
		_ = s.writeNote(note)
	}
	s.notify(out.ID)
	return out, nil
}

// Reject sends the delivery back with a person's reason, decided on
// state on (the zero State: any). The reason is kept as a review note in
// the reject's own transaction and becomes a review ref (the note's file
// for the next agent); once the reject commits, the review job posts it
// to the forge (a pull request review on GitHub) and adds its URL. A
// reject that does not apply keeps and posts nothing.
func (s *Service) Reject(ctx context.Context, ref, actor, reason string, on State) (*baton.Delivery, error) {
	return s.reject(ctx, ref, Decision{Action: ActReject, Actor: actor, Note: reason, On: on})
}

// reject is Reject with the decision's line notes, each checked against
// what the person could see.
func (s *Service) reject(ctx context.Context, ref string, dec Decision) (*baton.Delivery, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	in := Input{Action: ActReject, Actor: dec.Actor, Person: true, Now: s.now(), Note: dec.Note, Reason: dec.Note, On: dec.On}
	if _, err := Apply(*d, in); err != nil {
		return nil, err // refuse before reading the work
	}
	if err := s.checkNotes(ctx, d, dec.Notes); err != nil {
		return nil, err
	}
	return s.act(ctx, d.ID, in, &forge.Review{Verdict: baton.VerdictNotPass, Summary: dec.Note, Author: dec.Actor, Reject: true, Lines: dec.Notes})
}

// checkNotes refuses line notes on anything but what the person was
// shown: a file the change lands, or a line of the plan.
func (s *Service) checkNotes(ctx context.Context, d *baton.Delivery, notes []baton.LineNote) error {
	if len(notes) == 0 {
		return nil
	}
	w, err := s.Work(ctx, d.ID, forge.DefaultDiffLimits)
	if err != nil {
		return err
	}
	files := map[string]bool{}
	if w.Diff != nil {
		for _, f := range w.Diff.Files {
			files[f.Path] = !f.Binary
		}
	}
	planLines := 0
	if w.Plan != "" {
		planLines = strings.Count(w.Plan, "\n") + 1
	}
	for _, n := range notes {
		text, changed := files[n.Path]
		switch {
		case n.Path == forge.PlanPath && planLines > 0:
			if n.Line > planLines {
				return baton.Errorf(baton.Invalid, "line note on %s: the plan has %d lines", n.Where(), planLines)
			}
		case changed && !text:
			return baton.Errorf(baton.Invalid, "line note on %s: it is a binary file; say what is wrong in the reason", baton.Truncate(n.Where(), 120, "…"))
		case !changed:
			what := "a file the change lands"
			if planLines > 0 {
				what += " or " + forge.PlanPath
			}
			return baton.Errorf(baton.Invalid, "line note on %s: that is not %s; name the file as the diff shows it", baton.Truncate(n.Where(), 120, "…"), what)
		}
	}
	return nil
}

// FileURL is the file:// URL of an absolute path: what review notes and
// check logs of the local forge are referenced by, so an agent can open
// them.
func FileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// Reconcile finds running deliveries whose worker is gone and hands each
// back: its agent run ends as failed ("worker lost") and the phase is
// queued again, or failed after MaxLostAttempts. A worker is gone when it
// sent no heartbeat since now-lease, or at once when it was a process of
// this machine that no longer exists (OwnerGone). It returns how many it
// recovered.
func (s *Service) Reconcile(ctx context.Context, lease time.Duration, actor string) (int, error) {
	now := s.now()
	// Every running delivery (a heartbeat before a time far ahead), to
	// look at each owner; there are as many as there are agents at work.
	running, err := s.Queue.Store().FindStaleRunning(ctx, now.Add(24*time.Hour))
	if err != nil {
		return 0, err
	}
	lost := func(d *baton.Delivery) bool {
		return d.HeartbeatAt.Before(now.Add(-lease)) || OwnerGone(d.Owner)
	}
	n := 0
	for _, d := range running {
		if !lost(d) {
			continue
		}
		err := s.Queue.InTx(ctx, func(tx queue.Tx) error {
			cur, err := tx.Store().FindDeliveryByID(ctx, d.ID)
			if err != nil {
				return err
			}
			if cur.RunStatus != baton.StatusRunning || cur.Owner != d.Owner || !lost(cur) {
				return nil // it moved on, or its worker came back
			}
			note := fmt.Sprintf("worker %s lost: no heartbeat since %s", cur.Owner, cur.HeartbeatAt.Format(time.RFC3339))
			if OwnerGone(cur.Owner) {
				note = fmt.Sprintf("worker %s lost: its process is gone (no heartbeat since %s)", cur.Owner, cur.HeartbeatAt.Format(time.RFC3339))
			}
			res, err := Apply(*cur, Input{Action: ActLose, Actor: actor, Now: now, Attempt: cur.Attempt, Note: note})
			if err != nil {
				return err
			}
			if _, err := tx.Store().EndRunningAgentRuns(ctx, cur.ID, baton.RunFailed, note, now); err != nil {
				return err
			}
			if _, err := commit(ctx, tx, cur, res); err != nil {
				return err
			}
			n++
			return nil
		})
		if err == nil {
			s.notify(d.ID)
		}
		if err != nil && baton.ErrorCode(err) != baton.Conflict {
			return n, err
		}
	}
	return n, nil
}

// errText is an error's full text for the phase log: the user-safe
// message and its cause (git's stderr, the agent's exit status).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Store is the store outside any transaction, for the core packages
// (intake) and tests. Edges call the service's methods instead.
func (s *Service) Store() *sqlstore.Store { return s.Queue.Store() }

// Ping checks that the database answers: a server's readiness.
func (s *Service) Ping(ctx context.Context) error { return s.Store().Ping(ctx) }

// Database names the kind of database the deliveries live in: sqlite or
// postgres.
func (s *Service) Database() string { return string(s.Store().Dialect()) }

// CountByState counts deliveries by phase and run status, for metrics.
func (s *Service) CountByState(ctx context.Context) (map[StateKey]int64, error) {
	counts, err := s.Store().CountDeliveries(ctx)
	out := make(map[StateKey]int64, len(counts))
	for k, n := range counts {
		out[StateKey{Phase: baton.Phase(k[0]), Status: baton.RunStatus(k[1])}] = n
	}
	return out, err
}

// StateKey is a phase and run status.
type StateKey struct {
	Phase  baton.Phase
	Status baton.RunStatus
}

// AgentTotals are one agent's runs, cost and tokens over every delivery.
type AgentTotals = sqlstore.AgentTotals

// AgentTotals sums every agent run's cost and tokens, per agent, for
// metrics.
func (s *Service) AgentTotals(ctx context.Context) ([]AgentTotals, error) {
	return s.Store().SumAgentRuns(ctx)
}
