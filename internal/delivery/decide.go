package delivery

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
)

// Decide applies a person's decision to the delivery named ref, the one
// call an edge makes for any of them: approve, retry, cancel and close
// (note, optional, is the reason in the phase log), or reject (note is the
// reason, required, posted where the next run reads it). Anything else is
// Invalid.
func (s *Service) Decide(ctx context.Context, ref string, a Action, actor, note string) (*baton.Delivery, error) {
	switch a {
	case ActReject:
		if strings.TrimSpace(note) == "" {
			return nil, baton.Errorf(baton.Invalid, "reject needs a reason: it is posted where the next run reads it")
		}
	case ActApprove, ActRetry, ActCancel, ActClose:
	default:
		return nil, baton.Errorf(baton.Invalid, "%q is not a decision: want approve, reject, retry, cancel or close", baton.Truncate(string(a), 40, "…"))
	}
	if err := checkDecision(actor, note); err != nil {
		return nil, err
	}
	unlock, err := s.lockDecision(ctx, &ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if a == ActReject {
		return s.Reject(ctx, ref, actor, note)
	}
	return s.decide(ctx, ref, Input{Action: a, Actor: actor, Person: true, Note: note, Reason: note})
}

// checkDecision applies the caps on a decision's free text: the reason
// is posted where the next agent reads it and shown in every phase log.
func checkDecision(actor, note string) error {
	if err := baton.CheckSize("the reason", note, baton.MaxReason); err != nil {
		return err
	}
	return baton.CheckSize("the actor's name", actor, baton.MaxName)
}

// lockDecision resolves *ref to its delivery's id and holds that
// delivery's decision lock until unlock is called. The state machine
// already lets one decision per waiting phase win, whatever the process;
// the lock makes the losers of a race within this process lose before
// they act outside the database: a reject posts its reason (a comment on
// GitHub) before its change commits, and a losing reject must post
// nothing.
func (s *Service) lockDecision(ctx context.Context, ref *string) (unlock func(), err error) {
	d, err := s.Resolve(ctx, *ref)
	if err != nil {
		return nil, err
	}
	*ref = d.ID
	return s.deciding.lock(d.ID), nil
}

// keyLocks are mutexes by key, each kept while someone holds or waits
// for it.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// Retry runs a failed or blocked phase again, with change applied to how
// the delivery runs from now on: only the agent, its model and its
// arguments may change (a delivery whose agent is missing can switch to
// one that is installed). The new agent is checked before anything
// changes.
func (s *Service) Retry(ctx context.Context, ref, actor, note string, change Settings) (*baton.Delivery, error) {
	if err := checkDecision(actor, note); err != nil {
		return nil, err
	}
	unlock, err := s.lockDecision(ctx, &ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := checkAgentChange("a retry", change); err != nil {
		return nil, err
	}
	if change == (Settings{}) {
		return s.decide(ctx, ref, Input{Action: ActRetry, Actor: actor, Person: true, Note: note, Reason: note})
	}
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	c, err := reconfigured(d, change)
	if err != nil {
		return nil, err
	}
	return s.decide(ctx, d.ID, Input{Action: ActRetry, Actor: actor, Person: true, Note: note, Reason: note, Config: c})
}

// checkAgentChange refuses a change of how a delivery runs that a retry
// or a person's run (what) may not make: only the agent, its model and
// its arguments may change.
func checkAgentChange(what string, change Settings) error {
	if change != (Settings{Agent: change.Agent, Model: change.Model, AgentArgs: change.AgentArgs}) {
		return baton.Errorf(baton.Invalid, "%s may change the agent, its model and its arguments only", what)
	}
	return nil
}

// reconfigured is d's config with change applied (nil when change is
// empty), its agent command checked before anything changes.
func reconfigured(d *baton.Delivery, change Settings) (*baton.DeliveryConfig, error) {
	if change == (Settings{}) {
		return nil, nil
	}
	next := *d
	if err := change.apply(&next); err != nil {
		return nil, err
	}
	if _, err := agentrun.Command(agentrun.Spec{Agent: next.Config.Agent, Prompt: "-", ExtraArgs: next.Config.AgentArgs}); err != nil {
		return nil, err
	}
	return &next.Config, nil
}

// decide applies a person's approve, retry, cancel or close. A phase
// whose owner is a process of this machine that no longer exists is
// recovered first, so a retry after a killed `delivery run` works at once
// (the recovery queues the phase again, which is what retry asks for); a
// phase still running elsewhere is a Conflict that says when its lease
// runs out.
func (s *Service) decide(ctx context.Context, ref string, in Input) (*baton.Delivery, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	recovered := false
	if d.RunStatus == baton.StatusRunning && in.Action != ActCancel && OwnerGone(d.Owner) {
		if _, err := s.Reconcile(ctx, DefaultLease, WorkerID("reconciler")); err != nil {
			return nil, err
		}
		if d, err = s.Resolve(ctx, d.ID); err != nil {
			return nil, err
		}
		recovered = d.RunStatus != baton.StatusRunning
	}
	out, err := s.Act(ctx, d.ID, in)
	switch {
	case err == nil:
		return out, nil
	case baton.ErrorCode(err) != baton.Conflict:
		return nil, err
	case recovered && in.Action == ActRetry && d.RunStatus == baton.StatusPending:
		return d, nil // the recovery queued it again
	case d.RunStatus == baton.StatusRunning && in.Action != ActCancel:
		return nil, runningConflict(d, DefaultLease, s.now())
	}
	return nil, err
}

// Start queues the pending phase of the delivery named ref for a worker:
// a checkpoint phase waiting for a person starts. Anything else is a
// Conflict that says what would apply (a queued phase is already
// waiting for a worker). It is `run` for edges that hand the work to
// workers rather than run it in the foreground (RunNow).
func (s *Service) Start(ctx context.Context, ref, actor string) (*baton.Delivery, error) {
	if err := checkDecision(actor, ""); err != nil {
		return nil, err
	}
	unlock, err := s.lockDecision(ctx, &ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if d.RunStatus != baton.StatusPending || !d.Phase.Runnable() {
		return nil, baton.Errorf(baton.Conflict, "delivery %s is %s: only a pending phase can be started", d.ID, d.String())
	}
	in := Input{Action: ActApprove, Actor: actor, Person: true, Note: "started"}
	return s.Act(ctx, d.ID, in)
}

// Allowed lists the decisions a person can make on d now, in the order a
// person would consider them: run (start a waiting phase), approve,
// retry, cancel, reject, close.
func Allowed(d baton.Delivery) []Action {
	var out []Action
	pending := d.RunStatus == baton.StatusPending
	if pending && !d.Queued && d.Phase.Runnable() {
		out = append(out, ActRun)
	}
	for _, a := range []Action{ActApprove, ActRetry, ActCancel, ActReject, ActClose} {
		if a == ActApprove && pending {
			continue // starting a pending phase is run
		}
		if _, err := Apply(d, Input{Action: a, Actor: "x", Person: true, Note: "x", Attempt: d.Attempt}); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// RunNow runs the pending phase of the delivery named ref in this process,
// started by actor, the agent's output going to live (nil for none).
// change, as a retry's, says how the delivery runs from this run on: only
// the agent, its model and its arguments may change, and the new agent is
// checked before the phase is claimed.
// First a running phase whose worker is gone is recovered: at once when
// its owner was a process of this machine that no longer exists, else
// once its heartbeat is older than lease. Then the phase is claimed (a
// queued one before a worker gets to it) and run to its end. A phase
// still running elsewhere is a Conflict that says when its lease runs
// out. Canceling ctx cancels the run, as a person would; the phase can
// then be retried.
func (s *Service) RunNow(ctx context.Context, ref, actor string, change Settings, live io.Writer, lease time.Duration) (*baton.Delivery, error) {
	if err := checkAgentChange("a run", change); err != nil {
		return nil, err
	}
	if _, err := s.Reconcile(ctx, lease, WorkerID("reconciler")); err != nil {
		return nil, err
	}
	r := &Runner{Service: s, Owner: WorkerID("run"), Live: live, Foreground: true, change: change}
	d, err := r.Run(ctx, ref, "", actor)
	if baton.ErrorCode(err) == baton.Conflict {
		if cur, rerr := s.Resolve(ctx, ref); rerr == nil && cur.RunStatus == baton.StatusRunning {
			return nil, runningConflict(cur, lease, s.now())
		}
	}
	return d, err
}
