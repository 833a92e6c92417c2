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

// Decision is a person's decision on a delivery.
type Decision struct {
	// Action is run (start a waiting phase), approve, reject, retry,
	// cancel or close.
	Action Action
	Actor  string
	// Note is the reason: required for a reject (it is posted where the
	// next run reads it), optional otherwise (the phase log keeps it).
	Note string
	// Notes, on a reject, are the person's notes on lines of the change
	// or the plan they judged: kept with the reason, posted with it (as
	// line comments of the pull request review on GitHub) and each a
	// review ref the next run reads.
	Notes []baton.LineNote
	// On is the state the person decided on (StateOf, ParseState): the
	// decision is refused (Conflict) once the delivery has left it, or
	// its work branch moved from On.Commit. The zero State decides on
	// whatever the state is when the decision arrives.
	On State
	// Change, on a retry, is how the delivery runs from now on (see
	// Retry); anything else may not change it.
	Change Settings
}

// Decide applies a person's decision to the delivery named ref, on
// whatever state it is in when the decision arrives: approve, retry,
// cancel and close (note, optional, is the reason in the phase log), or
// reject (note is the reason, required). Edges that showed the person a
// state call DecideOn with it.
func (s *Service) Decide(ctx context.Context, ref string, a Action, actor, note string) (*baton.Delivery, error) {
	return s.DecideOn(ctx, ref, Decision{Action: a, Actor: actor, Note: note})
}

// DecideOn applies a person's decision to the delivery named ref: the
// one call an edge makes for any of them. A decision made on a state
// (dec.On) applies to that state only: of any number of decisions made
// on one waiting phase, one is accepted, and the rest, arriving after
// the delivery moved, are refused with what changed. Anything but a
// decision is Invalid.
func (s *Service) DecideOn(ctx context.Context, ref string, dec Decision) (*baton.Delivery, error) {
	switch dec.Action {
	case ActReject:
		if strings.TrimSpace(dec.Note) == "" {
			return nil, baton.Errorf(baton.Invalid, "reject needs a reason: it is posted where the next run reads it")
		}
	case ActRun, ActApprove, ActRetry, ActCancel, ActClose:
	default:
		return nil, baton.Errorf(baton.Invalid, "%q is not a decision: want run, approve, reject, retry, cancel or close", baton.Truncate(string(dec.Action), 40, "…"))
	}
	if dec.Action == ActRetry {
		if err := checkAgentChange("a retry", dec.Change); err != nil {
			return nil, err
		}
	} else if dec.Change != (Settings{}) {
		return nil, baton.Errorf(baton.Invalid, "only a retry can change the agent")
	}
	if err := checkDecision(dec.Actor, dec.Note); err != nil {
		return nil, err
	}
	if len(dec.Notes) > 0 && dec.Action != ActReject {
		return nil, baton.Errorf(baton.Invalid, "only a reject carries line notes: they say what to change")
	}
	if err := baton.CheckLineNotes(dec.Notes); err != nil {
		return nil, err
	}
	unlock, err := s.lockDecision(ctx, &ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.checkOn(ctx, ref, dec.On); err != nil {
		return nil, err
	}
	in := Input{Action: dec.Action, Actor: dec.Actor, Person: true, Note: dec.Note, Reason: dec.Note, On: dec.On}
	switch dec.Action {
	case ActReject:
		return s.reject(ctx, ref, dec)
	case ActRun:
		return s.start(ctx, ref, in)
	case ActRetry:
		d, err := s.Resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		if in.Config, err = reconfigured(d, dec.Change); err != nil {
			return nil, err
		}
	}
	return s.decide(ctx, ref, in)
}

// checkOn refuses, before anything is posted, a decision made on state
// on that the delivery has left (the state machine checks it again as
// it applies the decision), or on a work commit (on.Commit) that is no
// longer the head of its work branch: someone pushed after the person
// looked.
func (s *Service) checkOn(ctx context.Context, id string, on State) error {
	if on.IsZero() {
		return nil
	}
	d, err := s.Resolve(ctx, id)
	if err != nil {
		return err
	}
	if !on.same(d) {
		return movedError(d, on)
	}
	if on.Commit == "" {
		return nil
	}
	head, err := s.Workspaces().WorkCommit(d)
	if err != nil || head == "" {
		return baton.Errorf(baton.Conflict, "delivery %s: the work commit %s this decision was made on cannot be found on this server; look at it again", d.ID, on.Commit)
	}
	if !strings.HasPrefix(head, on.Commit) {
		return baton.Errorf(baton.Conflict, "delivery %s: its work branch moved since this decision was made, from %s to %s; look at the change again and decide on what it is now",
			d.ID, on.Commit, head[:min(12, len(head))])
	}
	return nil
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
	return s.DecideOn(ctx, ref, Decision{Action: ActRetry, Actor: actor, Note: note, Change: change})
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
	return s.DecideOn(ctx, ref, Decision{Action: ActRun, Actor: actor})
}

// start is Start, its decision lock held.
func (s *Service) start(ctx context.Context, ref string, in Input) (*baton.Delivery, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !in.On.IsZero() && !in.On.same(d) {
		return nil, movedError(d, in.On)
	}
	if d.RunStatus != baton.StatusPending || !d.Phase.Runnable() {
		return nil, baton.Errorf(baton.Conflict, "delivery %s is %s: only a pending phase can be started", d.ID, d.String())
	}
	in.Action, in.Note, in.Reason = ActApprove, startedNote, ""
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
