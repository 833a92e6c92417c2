package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Runner defaults.
const (
	DefaultPollEvery      = 500 * time.Millisecond
	DefaultHeartbeatEvery = 5 * time.Second
	// DefaultLease is how old a running delivery's heartbeat may get
	// before its worker is taken for dead.
	DefaultLease = 30 * time.Second
)

// Runner claims a delivery's pending phase and runs it: agent phases
// through agentrun in a fresh worktree, system phases (verify, deploy,
// observe) through the forge and the delivery's commands. While it runs
// it beats a heartbeat into the delivery row and watches the row for a
// cancel, which kills the agent; a result that arrives after a cancel is
// discarded.
type Runner struct {
	// Service is the pipeline the runner claims phases from and reports
	// to.
	Service *Service
	// Owner names this worker in the phase log and the delivery row.
	Owner string
	// Live receives the agent's output as it runs (delivery run); nil for
	// workers.
	Live io.Writer
	// Foreground makes an interrupted run a cancel by the person (delivery
	// run, Ctrl-C); otherwise (a stopping worker) the attempt is released
	// back to the queue.
	Foreground     bool
	PollEvery      time.Duration
	HeartbeatEvery time.Duration
	KillGrace      time.Duration
	// CheckWait bounds waiting for CI on GitHub.
	CheckWait forge.CheckWait

	// change is how a person's run (RunNow) changes the delivery's agent
	// when it claims the phase.
	change Settings
}

// errStale marks a job whose phase is no longer pending: someone else
// ran it, or a person moved the delivery on. The job has nothing to do.
var errStale = errors.New("stale job")

// canceledError is the cause when a person canceled the attempt: the
// phase log records the cancel on it, and who made it.
type canceledError struct{ by string }

func (e *canceledError) Error() string { return "canceled by " + e.by }

// errLostClaim is the cause when the delivery stopped running this
// attempt for another reason (taken over after a lost heartbeat).
var errLostClaim = errors.New("the attempt is no longer the delivery's")

// Run claims the pending phase of the delivery named ref and runs it to
// the end. want is the phase a job was queued for. person is the actor
// for `delivery run` (a person may start a waiting checkpoint phase); ""
// means this worker. For a worker, a job with nothing to run (stale,
// claimed elsewhere) returns nil, nil; for a person it is a Conflict.
func (r *Runner) Run(ctx context.Context, ref string, want baton.Phase, person string) (d *baton.Delivery, err error) {
	actor := r.Owner
	if person != "" {
		actor = person
	}
	found, err := r.Service.Resolve(ctx, ref)
	if err != nil {
		if person == "" && baton.ErrorCode(err) == baton.NotFound {
			return nil, nil // deleted under the job
		}
		return nil, err
	}
	if err := r.roomToClaim(person); err != nil {
		return nil, err
	}
	// Claim: pending → running, attempt+1, in one conditional update.
	err = r.Service.Queue.InTx(ctx, func(tx queue.Tx) error {
		cur, err := tx.Store().FindDeliveryByID(ctx, found.ID)
		if err != nil {
			return err
		}
		if person == "" && (cur.Phase != want || cur.RunStatus != baton.StatusPending) {
			return errStale
		}
		in := Input{Action: ActRun, Actor: actor, Person: person != "", Now: r.Service.now()}
		if person != "" {
			if in.Config, err = reconfigured(cur, r.change); err != nil {
				return err
			}
		}
		res, err := Apply(*cur, in)
		if err != nil {
			if person == "" {
				return errStale
			}
			return err
		}
		res.Delivery.Owner = r.Owner
		d, err = commit(ctx, tx, cur, res)
		return err
	})
	if err == nil {
		r.Service.notify(d.ID)
	}
	if errors.Is(err, errStale) {
		return nil, nil
	}
	if err != nil {
		if person == "" && baton.ErrorCode(err) == baton.Conflict {
			return nil, nil // another worker claimed it first
		}
		return nil, err
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		r.watch(runCtx, stop, d)
	}()
	f, ferr := r.Service.forge(runCtx, d)
	var report forge.PhaseReport
	var startWarn string
	if ferr == nil {
		report, startWarn = r.reportStart(runCtx, d, f)
	}
	refused := &netpolicy.Refusals{}
	out := r.execute(context.WithValue(runCtx, refusedKey{}, refused), d, f, ferr)
	if out.refused, out.refusedMore = refused.List(); len(out.refused) > 0 {
		out.warn("the box's network refused %s", strings.Join(netpolicy.Summary(out.refused, out.refusedMore, 5), "; "))
	}
	stop(nil)
	<-watchDone
	out = r.outOfSpace(ctx, d, out)
	cause := context.Cause(runCtx)
	var canceled *canceledError
	stopped := errors.As(cause, &canceled) || errors.Is(cause, errLostClaim)
	if stopped && r.Live != nil {
		fmt.Fprintf(r.Live, "== %s: %s attempt %d stopped (%v); its result is discarded\n", d.ID, d.Phase, d.Attempt, cause)
	}
	interrupted := ctx.Err() != nil && !stopped
	if startWarn != "" {
		out.warn("%s", startWarn)
	}
	// A released attempt runs again and reports again; anything else
	// ended here.
	if ferr == nil && (!interrupted || r.Foreground) && !errors.Is(cause, errLostClaim) {
		if warn := r.reportEnd(ctx, d, f, report, out, interrupted || canceled != nil); warn != "" {
			out.warn("%s", warn)
		}
	}
	got, err := r.finish(ctx, d, out, interrupted, actor)
	if got != nil && workDone(got) {
		// Deployed or closed: the worktree and the cache's branches are
		// not needed again (the source keeps its branch).
		_ = r.Service.Workspaces().Release(ctx, got)
	}
	return got, err
}

// workDone reports a delivery that needs its work branch no more: past
// deploy, or closed.
func workDone(d *baton.Delivery) bool {
	return d.Phase == baton.PhaseObserve || d.Phase == baton.PhaseClose
}

// watch polls the delivery row: a cancel (or any change of the running
// attempt) cancels the run; a heartbeat is written every HeartbeatEvery.
func (r *Runner) watch(ctx context.Context, stop context.CancelCauseFunc, d *baton.Delivery) {
	poll := r.PollEvery
	if poll <= 0 {
		poll = DefaultPollEvery
	}
	beat := r.HeartbeatEvery
	if beat <= 0 {
		beat = DefaultHeartbeatEvery
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	last := time.Now()
	st := r.Service.Store()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, err := st.FindDeliveryByID(ctx, d.ID)
		if err != nil {
			continue // a busy database: look again next time
		}
		if cur.RunStatus != baton.StatusRunning || cur.Attempt != d.Attempt {
			stop(r.stopCause(ctx, d))
			return
		}
		if time.Since(last) >= beat {
			if err := st.Heartbeat(ctx, d.ID, d.Attempt, r.Service.now()); baton.ErrorCode(err) == baton.Conflict {
				stop(errLostClaim)
				return
			}
			last = time.Now()
		}
	}
}

// stopCause says why attempt d.Attempt stopped being the delivery's: a
// person's cancel, which the phase log records as the cancel action on
// that attempt, or anything else (a takeover after a lost heartbeat).
func (r *Runner) stopCause(ctx context.Context, d *baton.Delivery) error {
	log, err := r.Service.Store().PhaseLog(ctx, d.ID)
	if err != nil {
		return errLostClaim
	}
	for i := len(log) - 1; i >= 0 && log[i].Attempt >= d.Attempt; i-- {
		if e := log[i]; e.Attempt == d.Attempt && e.Action == string(ActCancel) {
			return &canceledError{by: e.Actor}
		}
	}
	return errLostClaim
}

// outcome is what a phase run produced.
type outcome struct {
	verdict baton.Verdict
	skipped bool
	blocked bool // waits for a person: note says why
	note    string
	refs    []baton.Ref
	err     error
	run     *baton.AgentRun // the agent run, for agent phases
	// round is what a review or verify saw of the round, for the stall
	// rule (Input.Round).
	round *baton.Round
	// review is a reviewer's verdict, kept as a review note and posted
	// to the forge when the outcome is recorded.
	review *forge.Review
	// refused is what the network of the phase's boxes refused.
	refused     []netpolicy.RefusalCount
	refusedMore int
}

// add puts note after what the outcome says.
func (o *outcome) add(note string) { o.note = joinNote(o.note, note) }

func (o *outcome) warn(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if o.note == "" {
		o.note = "warning: " + w
	} else {
		o.note += "; warning: " + w
	}
}

// finish records the outcome: the agent run row, then the transition. A
// transition refused because the attempt is no longer running (canceled,
// lost) discards the outcome but keeps the agent run's data.
func (r *Runner) finish(ctx context.Context, d *baton.Delivery, out outcome, interrupted bool, starter string) (*baton.Delivery, error) {
	ctx = context.WithoutCancel(ctx)
	in := Input{Actor: r.Owner, Now: r.Service.now(), Attempt: d.Attempt, Refs: out.refs}
	switch {
	case interrupted && r.Foreground:
		in.Action, in.Actor, in.Person = ActCancel, starter, true
		if out.run != nil {
			out.run.Status, out.run.Error = baton.RunCanceled, "interrupted"
		}
	case interrupted:
		in.Action = ActRelease
		if out.run != nil {
			out.run.Status, out.run.Error = baton.RunCanceled, "worker "+r.Owner+" stopped; the phase was queued again"
		}
	case out.err != nil:
		in.Action, in.Note = ActFail, errText(out.err)
		if out.note != "" {
			in.Note += " (" + out.note + ")"
		}
	default:
		in.Action, in.Verdict, in.Skipped, in.Block, in.Note = ActForward, out.verdict, out.skipped, out.blocked, out.note
		in.Round = out.round
	}
	var got *baton.Delivery
	var note *baton.ReviewNote
	record := func(tx queue.Tx) error {
		note = nil
		if out.run != nil {
			if err := tx.Store().FinishAgentRun(ctx, out.run); err != nil {
				return err
			}
		}
		cur, err := tx.Store().FindDeliveryByID(ctx, d.ID)
		if err != nil {
			return err
		}
		res, err := Apply(*cur, in)
		if baton.ErrorCode(err) == baton.Conflict {
			got = cur // canceled or lost meanwhile: the result is discarded
			return nil
		}
		if err != nil {
			return err
		}
		if out.review != nil && in.Action == ActForward {
			var refs []baton.Ref
			if note, refs, err = r.Service.keepReview(ctx, tx, cur, *out.review); err != nil {
				return err
			}
			with := in
			with.Refs = append(slices.Clone(in.Refs), refs...)
			if res, err = Apply(*cur, with); err != nil {
				return err
			}
		}
		if in.Action == ActCancel {
			if _, err := tx.Store().EndRunningAgentRuns(ctx, cur.ID, baton.RunCanceled, "interrupted", in.Now); err != nil {
				return err
			}
		}
		got, err = commit(ctx, tx, cur, res)
		return err
	}
	err := r.Service.Queue.InTx(ctx, record)
	if _, full := r.Service.diskFull(); err != nil && full && r.Service.reserve().Release() {
		// The disk filled up since the phase ended: the reserve makes the
		// room to record it.
		err = r.Service.Queue.InTx(ctx, record)
	}
	if err == nil {
		if note != nil {
			_ = r.Service.writeNote(note) // else the next agent phase writes it
		}
		r.Service.notify(d.ID)
	}
	return got, err
}

// runDir is where a run's logs and outputs go.
func (r *Runner) runDir(d *baton.Delivery) string {
	return filepath.Join(r.Service.DataDir, "runs", d.ID, fmt.Sprintf("attempt-%d-%s", d.Attempt, d.Phase))
}

// execute runs the claimed phase through its forge (or the error of
// finding it).
func (r *Runner) execute(ctx context.Context, d *baton.Delivery, f forge.Forge, err error) (out outcome) {
	if err != nil {
		return outcome{err: err}
	}
	switch d.Phase {
	case baton.PhasePlan:
		return r.plan(ctx, d, f)
	case baton.PhaseImplement:
		return r.implement(ctx, d, f)
	case baton.PhaseReview:
		return r.review(ctx, d, f)
	case baton.PhaseVerify:
		return r.verify(ctx, d, f)
	case baton.PhaseDeploy:
		return r.deploy(ctx, d, f)
	case baton.PhaseObserve:
		return r.observe(ctx, d, f)
	}
	return outcome{err: baton.Errorf(baton.Invalid, "phase %s has nothing to run", d.Phase)}
}

// agent runs the delivery's agent for its phase in co, recording an
// agent run that is written as running before the agent starts. A
// person's message (Say) stops the run at once and resumes its session
// with the message (a fresh run with the prompt and the message where
// the agent reported no session), as often as messages come: each run
// is an agent run of its own, and the last one's is returned.
func (r *Runner) agent(ctx context.Context, d *baton.Delivery, co *forge.Checkout, schema []byte) (*baton.AgentRun, *agentrun.Result, error) {
	// The review notes its refs point at are there to read, also when
	// the process that kept one died before writing its file.
	if err := r.Service.writeNotes(ctx, d); err != nil {
		return nil, nil, baton.WrapError(baton.Unavailable, err, "write the review notes of %s", d.ID)
	}
	// Messages sent before the run began are in its prompt, as refs.
	r.givePending(ctx, d, fmt.Sprintf("given with the prompt of %s attempt %d, as a ref", d.Phase, d.Attempt))
	timeout := d.Config.Timeout(d.Phase)
	deadline := time.Now().Add(timeout)
	prompt, resume := BuildPrompt(d), ""
	for first := true; ; first = false {
		if !first && timeout > 0 {
			// A resumed run has what is left of the phase's time.
			timeout = max(time.Until(deadline), time.Millisecond)
		}
		run, res, err, msgs := r.agentRun(ctx, d, co, schema, prompt, resume, timeout)
		if len(msgs) == 0 || ctx.Err() != nil || timeout > 0 && time.Until(deadline) <= 0 {
			// Messages a run had no time left for stay waiting: their job
			// records that the run ended without them.
			return run, res, err
		}
		how := "the run was started again with it"
		if res != nil && res.SessionID != "" && agentrun.ResumesOffline(d.Config.Agent) {
			resume, prompt = res.SessionID, messagesPrompt(msgs)
			how = fmt.Sprintf("the agent's session %s was resumed with it", res.SessionID)
		} else {
			resume, prompt = "", BuildPrompt(d)+"\n\n## A person's message\n\n"+messagesPrompt(msgs)
		}
		run.Status, run.Error = baton.RunCanceled, "stopped to give it a person's message; "+how
		if ferr := r.Service.Store().FinishAgentRun(context.WithoutCancel(ctx), run); ferr != nil {
			return run, res, ferr
		}
		for _, m := range msgs {
			_, _ = r.Service.Store().DeliverMessage(context.WithoutCancel(ctx), m.ID, "given mid-run: "+how, r.Service.now())
		}
		if r.Live != nil {
			fmt.Fprintf(r.Live, "== %s: %s: %d message(s) from a person: %s\n", d.ID, d.Phase, len(msgs), how)
		}
	}
}

// errMessage stops an agent's run for a person's message.
var errMessage = errors.New("a person's message")

// agentRun is one run of the agent: prompt, in session resume when set.
// msgs are the messages it was stopped for (none when it ended on its
// own).
func (r *Runner) agentRun(ctx context.Context, d *baton.Delivery, co *forge.Checkout, schema []byte, prompt, resume string, timeout time.Duration) (run *baton.AgentRun, res *agentrun.Result, err error, msgs []baton.Message) {
	run = &baton.AgentRun{
		DeliveryID: d.ID, Phase: d.Phase, Attempt: d.Attempt, Agent: d.Config.Agent,
		Prompt: prompt, SystemPrompt: SystemPrompt(d.Phase, co.Base),
		LogDir: r.runDir(d), StartedAt: r.Service.now(),
	}
	if resume != "" || prompt != BuildPrompt(d) {
		// Its own logs: the first run's stay as they were.
		run.LogDir = fmt.Sprintf("%s-%d", run.LogDir, time.Now().UnixNano())
	}
	if err := r.Service.Store().CreateAgentRun(ctx, run); err != nil {
		return nil, nil, err, nil
	}
	if r.Live != nil {
		fmt.Fprintf(r.Live, "== %s: %s %s (attempt %d) in %s\n", d.ID, d.Phase, d.Config.Agent, d.Attempt, co.Dir)
	}
	// The output goes to the delivery's event log too, for anyone
	// watching it (the dashboard, `delivery watch`), here or elsewhere.
	rec := r.Service.recordOutput(ctx, d, run.N)
	var live io.Writer = rec
	if r.Live != nil {
		live = io.MultiWriter(rec, r.Live)
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	heard := make(chan []baton.Message, 1)
	go r.listen(runCtx, d, heard, stop)
	res, err = agentrun.Run(runCtx, agentrun.Spec{
		Agent: d.Config.Agent, Prompt: prompt, Resume: resume, SystemPrompt: run.SystemPrompt, Dir: co.Dir,
		OutputSchema: schema, Timeout: timeout, KillGrace: r.KillGrace, Model: d.Config.Model,
		ExtraArgs: d.Config.AgentArgs, PassEnv: d.Config.PassEnv, Live: live, LogDir: run.LogDir,
		Confine: r.confine(ctx, d, co),
		// Which delivery and phase this is, as verify and deploy commands
		// get it: a command:<argv> agent can answer by phase.
		Env: append(slices.Clone(r.Service.AgentEnv), "BATON_DELIVERY_ID="+d.ID, "BATON_PHASE="+string(d.Phase), "BATON_WORK_BRANCH="+d.WorkBranch()),
	})
	rec.Close()
	stopped := errors.Is(context.Cause(runCtx), errMessage)
	stop(nil)
	if stopped {
		msgs = <-heard
	}
	run.FinalMessage, run.Model, run.SessionID = res.FinalText, res.Model, res.SessionID
	run.CostUSD, run.InputTokens, run.OutputTokens = res.CostUSD, res.InputTokens, res.OutputTokens
	run.Duration, run.ExitCode, run.EndedAt = res.Duration, res.ExitCode, r.Service.now()
	run.Status = baton.RunSucceeded
	if err != nil {
		run.Status, run.Error = baton.RunFailed, errText(err)
	}
	return run, res, err, msgs
}

// listen watches for messages to d's running attempt while ctx lives; on
// the first it hands them to heard and stops the run.
func (r *Runner) listen(ctx context.Context, d *baton.Delivery, heard chan<- []baton.Message, stop context.CancelCauseFunc) {
	t := time.NewTicker(cmp.Or(r.PollEvery, DefaultPollEvery))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ms, err := r.Service.Store().Messages(ctx, d.ID, true)
		if err != nil {
			continue // a busy database: look again next time
		}
		ms = slices.DeleteFunc(ms, func(m baton.Message) bool { return m.Attempt < d.Attempt })
		if len(ms) == 0 {
			continue
		}
		heard <- ms
		stop(errMessage)
		return
	}
}

// givePending marks the messages sent to d before its attempt began,
// which its refs hold, as given, with outcome.
func (r *Runner) givePending(ctx context.Context, d *baton.Delivery, outcome string) {
	ms, err := r.Service.Store().Messages(ctx, d.ID, true)
	if err != nil {
		return // the message's job records it later
	}
	for _, m := range ms {
		if m.Attempt >= d.Attempt {
			continue // sent to this attempt: listen gives it
		}
		_, _ = r.Service.Store().DeliverMessage(ctx, m.ID, outcome, r.Service.now())
	}
}

// confine is how an agent or a command working in co runs: in its
// worktree, reaching of the data directory only that worktree and what
// co.Confine grants (never the API token, the database, another
// worktree or a run log).
func (r *Runner) confine(ctx context.Context, d *baton.Delivery, co *forge.Checkout) *sandbox.Confinement {
	c := r.Service.Sandbox.ForProject(d.Repository) // caches of its repository's own
	co.Confine(&c)
	c.Policy = c.Policy.Merge(sandbox.Policy{
		// Refs point the agent at its review notes and its failed checks'
		// logs: its own, read-only.
		Read: []string{r.Service.notesDir(d), filepath.Join(r.Service.DataDir, "runs", d.ID)},
		Deny: []string{r.Service.DataDir},
	})
	// The repository's own hosts (checked when the delivery was made),
	// and a record of what the box refuses, for the pull request.
	for _, e := range d.Config.EgressAllow {
		if a, err := netpolicy.Parse(e); err == nil {
			c.Network.Allow = c.Network.Allow.With(a)
		}
	}
	if rs, ok := ctx.Value(refusedKey{}).(*netpolicy.Refusals); ok {
		c.Network.OnRefuse = func(x netpolicy.Refusal) { rs.Add(x) }
	}
	return &c
}

// refusedKey holds, in a phase attempt's context, the record of what its
// boxes' network refused (*netpolicy.Refusals), for the pull request.
type refusedKey struct{}

// checkout prepares the delivery's worktree for the phase.
func (r *Runner) checkout(ctx context.Context, d *baton.Delivery, f forge.Forge) (*forge.Checkout, error) {
	return r.Service.Workspaces().Checkout(ctx, d, f)
}

// ready is the delivery's worktree for an agent phase, with the set-up
// run in it when it is due; note says what the set-up did.
func (r *Runner) ready(ctx context.Context, d *baton.Delivery, f forge.Forge) (co *forge.Checkout, note string, err error) {
	if co, err = r.checkout(ctx, d, f); err != nil {
		return nil, "", err
	}
	note, err = r.prepare(ctx, d, co)
	return co, note, err
}

func (r *Runner) plan(ctx context.Context, d *baton.Delivery, f forge.Forge) (out outcome) {
	co, ready, err := r.ready(ctx, d, f)
	if err != nil {
		return outcome{err: err}
	}
	defer out.add(ready)
	run, res, err := r.agent(ctx, d, co, nil)
	out.run = run
	if err != nil {
		out.err = err
		return out
	}
	plan := strings.TrimSpace(res.FinalText)
	if plan == "" {
		run.Status, run.Error = baton.RunFailed, "empty final message"
		out.err = baton.Errorf(baton.Unavailable, "the plan run ended with an empty final message: the plan must be in it")
		return out
	}
	// The plan is committed, not injected: later phases read docs/plan.md.
	// Written beneath the worktree: a docs the agent made a link is refused.
	if err := co.WriteFile(forge.PlanPath, []byte(plan+"\n")); err != nil {
		out.warn("plan not written: %v", err)
		return out
	}
	title := d.Title()
	if _, _, err := co.CommitChanges(ctx, "Plan: "+title+"\n\nbaton delivery "+d.ID); err != nil {
		out.warn("plan not committed: %v", err)
		return out
	}
	if _, err := co.Publish(ctx); err != nil {
		out.warn("work branch %s not pushed: %v", d.WorkBranch(), err)
		return out
	}
	ref, err := f.OpenWork(ctx, d, co.Base, title, plan)
	if err != nil {
		// A failed draft PR is a warning, never a failed plan.
		out.warn("draft pull request not opened: %s", errText(err))
		return out
	}
	out.refs = append(out.refs, ref)
	return out
}

func (r *Runner) implement(ctx context.Context, d *baton.Delivery, f forge.Forge) (out outcome) {
	co, ready, err := r.ready(ctx, d, f)
	if err != nil {
		return outcome{err: err}
	}
	defer out.add(ready)
	before := co.Start
	run, res, agentErr := r.agent(ctx, d, co, nil)
	out.run = run
	// Whatever the agent left, committed or not, is pushed: work is never
	// lost, also when the agent failed or was stopped.
	msg := fmt.Sprintf("%s\n\nWork left uncommitted by the %s agent, committed by baton (delivery %s, attempt %d).", d.Title(), d.Config.Agent, d.ID, d.Attempt)
	after, committed, cerr := co.CommitChanges(context.WithoutCancel(ctx), msg)
	var perr error
	if cerr == nil && (after != before || !co.WorkExists) {
		_, perr = co.Publish(context.WithoutCancel(ctx))
	}
	switch {
	case agentErr != nil:
		out.err = agentErr
		if committed && perr == nil {
			out.note = "the partial work was committed and pushed"
		}
	case cerr != nil:
		out.err = baton.WrapError(baton.Unavailable, cerr, "commit the agent's work")
	case perr != nil:
		out.err = baton.WrapError(baton.Unavailable, perr, "push %s", d.WorkBranch())
	case after == before:
		// Never a silent success: an agent whose edits all failed (a
		// sandbox refusing its tools) or that saw nothing to do would
		// otherwise send the same branch to review round after round.
		out.blocked = true
		out.note = joinNote("the agent changed nothing", toolFailures(res)) +
			"; approve to send the work branch to review as it stands, retry to run implement again, reject to plan again"
	default:
		n, _ := co.CommitsBetween(ctx, before, after)
		out.note = fmt.Sprintf("%d commit(s) pushed to %s", n, d.WorkBranch())
		if committed {
			out.note += ", including the agent's uncommitted work"
		}
		out.note = joinNote(out.note, toolFailures(res))
	}
	return out
}

// shownToolFailures is how many failed tool calls a phase's note names.
const shownToolFailures = 3

// toolFailures says which of an agent's tool calls failed, "" when none
// did.
func toolFailures(res *agentrun.Result) string {
	if res == nil || res.ToolFailures == 0 {
		return ""
	}
	shown := res.FailedTools[:min(shownToolFailures, len(res.FailedTools))]
	s := fmt.Sprintf("%d of its %d tool calls failed: %s", res.ToolFailures, res.ToolCalls, strings.Join(shown, "; "))
	if res.ToolFailures > len(shown) {
		s += "; …"
	}
	return s
}

func (r *Runner) review(ctx context.Context, d *baton.Delivery, f forge.Forge) (out outcome) {
	co, ready, err := r.ready(ctx, d, f)
	if err != nil {
		return outcome{err: err}
	}
	defer out.add(ready)
	if !co.WorkExists {
		return outcome{err: baton.Errorf(baton.Conflict, "there is no work branch %s to review: reject to implement", d.WorkBranch())}
	}
	run, res, err := r.agent(ctx, d, co, ReviewSchema)
	out.run = run
	if err != nil && !errors.Is(err, agentrun.ErrBadOutput) {
		out.err = err
		return out
	}
	v, perr := ParseVerdict(res.FinalText, res.Structured)
	if perr != nil {
		run.Status, run.Error = baton.RunFailed, baton.ErrorMessage(perr)
		out.err = baton.WrapError(baton.Unavailable, perr, "the review gave no usable verdict")
		return out
	}
	if err != nil { // schema mismatch but a verdict we can read
		run.Status, run.Error = baton.RunSucceeded, ""
	}
	// Kept and posted with the verdict's transition (finish), so a
	// verdict discarded (a cancel meanwhile) leaves no review behind.
	out.review = &forge.Review{Verdict: v.Verdict, Summary: v.Summary, Feedback: v.Feedback,
		Author: "reviewer agent (" + d.Config.Agent + ")"}
	out.verdict = v.Verdict
	out.note = joinNote(v.Summary, out.note)
	out.round = &baton.Round{Tree: treeOf(ctx, co), Feedback: textDigest(v.Feedback)}
	return out
}

// treeOf is a digest of the tree of co's head, "" when git cannot say
// (the stall rule then leaves the files out).
func treeOf(ctx context.Context, co *forge.Checkout) string {
	tree, err := co.HeadTree(ctx)
	if err != nil || tree == "" {
		return ""
	}
	return baton.Digest(tree)
}

// textDigest is a digest of s with case and white space folded, "" for
// no text: feedback worded the same is the same feedback.
func textDigest(s string) string {
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	if s == "" {
		return ""
	}
	return baton.Digest(s)
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func (r *Runner) verify(ctx context.Context, d *baton.Delivery, f forge.Forge) (out outcome) {
	// A fresh checkout of the work commit, not the delivery's worktree:
	// nothing an agent left there (uncommitted or ignored files, a
	// process still writing) is verified in place of what is merged.
	co, done, err := r.Service.Workspaces().Commit(ctx, d, f)
	if err != nil {
		if baton.ErrorCode(err) == baton.Conflict {
			err = baton.Errorf(baton.Conflict, "there is no work branch %s to verify", d.WorkBranch())
		}
		return outcome{err: err}
	}
	defer done()
	sha := co.Start
	// What deploy merges: this commit, whatever verify finds of it.
	out.refs = append(out.refs, verifiedRef(sha))
	var did, failed []string
	wait := r.CheckWait
	if wait.Timeout <= 0 {
		wait.Timeout = d.Config.Timeout(baton.PhaseVerify)
	}
	if wait.Appear <= 0 {
		wait.Appear = 2 * time.Minute
	}
	res, hasCI, err := f.Checks(ctx, d, sha, wait)
	switch {
	case err != nil:
		return outcome{err: err}
	case hasCI && len(res.Pending) > 0:
		return outcome{err: baton.Errorf(baton.Unavailable, "checks still running after %s: %s", wait.Timeout, strings.Join(res.Pending, ", "))}
	case hasCI && res.Total > 0:
		did = append(did, fmt.Sprintf("%d check(s) on %s", res.Total, sha[:12]))
		for _, c := range res.Failed {
			failed = append(failed, c.Label)
		}
		out.refs = append(out.refs, res.Failed...)
	}
	if cmd := d.Config.VerifyCommand; cmd != "" {
		// A fresh checkout has nothing installed: the set-up runs in it
		// first, fast from the caches its earlier runs filled.
		if len(d.Config.Setup) > 0 {
			ready, err := r.setup(ctx, d, co)
			if err != nil {
				return outcome{refs: out.refs, err: err}
			}
			defer out.add(ready)
		}
		cr, err := r.command(ctx, d, co, cmd, "verify.log", nil)
		if err != nil {
			return outcome{err: err}
		}
		did = append(did, "`"+cmd+"`")
		if cr.exit != 0 {
			failed = append(failed, fmt.Sprintf("`%s` exited %d", cmd, cr.exit))
			out.refs = append(out.refs, baton.Ref{Role: baton.RoleCheck, Type: "verify_command", Label: fmt.Sprintf("verify: %s (exit %d)", cmd, cr.exit), URL: FileURL(cr.log)})
		}
	}
	switch {
	case len(did) == 0:
		why := "no --verify command is set"
		if hasCI {
			why = fmt.Sprintf("no check reported on %s within %s and no --verify command is set", sha[:12], wait.Appear)
		} else {
			why += " and the local forge has no CI"
		}
		out.skipped, out.note = true, "nothing to verify: "+why
	case len(failed) > 0:
		out.verdict = baton.VerdictNotPass
		out.note = "failed: " + strings.Join(failed, "; ")
		out.round = &baton.Round{Tree: treeOf(ctx, co), Check: textDigest(out.note)}
	default:
		out.verdict = baton.VerdictPass
		out.note = "passed on " + sha[:12] + ": " + strings.Join(did, ", ")
	}
	return out
}

// verifiedType is the type of the work ref that names the commit verify
// last ran on (its label is the full commit name): deploy merges exactly
// it.
const verifiedType = "verified_commit"

func verifiedRef(sha string) baton.Ref {
	return baton.Ref{Role: baton.RoleWork, Type: verifiedType, Label: sha}
}

// verifiedCommit is the commit verify last ran on, "" when it has not run.
func verifiedCommit(d *baton.Delivery) string {
	for _, r := range d.Refs {
		if r.Role == baton.RoleWork && r.Type == verifiedType {
			return r.Label
		}
	}
	return ""
}

// checkVerified refuses to deploy a work head verify did not run on: the
// work branch moved after verify (a push to the pull request, another
// round), so what would be merged was not verified.
func checkVerified(d *baton.Delivery, head string) error {
	v := verifiedCommit(d)
	if v == "" || v == head {
		return nil
	}
	return baton.Errorf(baton.Conflict, "the work branch %s moved after verify ran on %s (it is at %s now): reject the delivery to implement, so that review and verify run on what would be merged",
		d.WorkBranch(), v[:min(12, len(v))], head[:min(12, len(head))])
}

func (r *Runner) deploy(ctx context.Context, d *baton.Delivery, f forge.Forge) (out outcome) {
	noWork := baton.Errorf(baton.Conflict, "there is no work branch %s to deploy", d.WorkBranch())
	if cmd := d.Config.DeployCommand; cmd != "" {
		// In a fresh checkout of the commit verify ran on, as verify did.
		co, done, err := r.Service.Workspaces().Commit(ctx, d, f)
		if baton.ErrorCode(err) == baton.Conflict {
			return outcome{err: noWork}
		} else if err != nil {
			return outcome{err: err}
		}
		defer done()
		if err := checkVerified(d, co.Start); err != nil {
			return outcome{err: err}
		}
		cr, err := r.command(ctx, d, co, cmd, "deploy.log", []string{"BATON_BASE_BRANCH=" + co.Base, "BATON_WORK_SHA=" + co.Start})
		if err != nil {
			return outcome{err: err}
		}
		if cr.exit != 0 {
			return outcome{err: baton.Errorf(baton.Unavailable, "deploy command `%s` exited %d: %s (log %s)", cmd, cr.exit, cr.tail, cr.log)}
		}
		return outcome{note: "deployed " + co.Start[:12] + " by `" + cmd + "`"}
	}
	// A merge needs no worktree: the base and the work branch's head.
	base, sha, err := r.Service.Workspaces().Work(ctx, d, f)
	if err != nil {
		return outcome{err: err}
	}
	if sha == "" {
		return outcome{err: noWork}
	}
	if err := checkVerified(d, sha); err != nil {
		return outcome{err: err}
	}
	ref, err := f.Merge(ctx, d, r.Service.Workspaces(), base, sha, d.Config.MergeMethod)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{refs: []baton.Ref{ref}, note: ref.Label}
}

func (r *Runner) observe(ctx context.Context, d *baton.Delivery, f forge.Forge) (out outcome) {
	cmd := d.Config.ObserveCommand
	if cmd == "" {
		return outcome{skipped: true, note: "nothing to observe: no --observe command is set"}
	}
	// The probe runs in a worktree of the base branch: the deployed code.
	co, done, err := r.Service.Workspaces().Observe(ctx, d, f)
	if err != nil {
		return outcome{err: err}
	}
	defer done()
	window, every := d.Config.ObserveWindow, d.Config.ObserveEvery
	if window <= 0 {
		window = baton.DefaultObserveWindow
	}
	if every <= 0 {
		every = baton.DefaultObserveEvery
	}
	start := time.Now()
	for i := 1; ; i++ {
		cr, err := r.command(ctx, d, co, cmd, fmt.Sprintf("observe-%d.log", i), nil)
		if err != nil {
			return outcome{err: err}
		}
		if cr.exit != 0 {
			return outcome{
				refs: []baton.Ref{{Role: baton.RoleCheck, Type: "observe_command", Label: fmt.Sprintf("observe: %s (exit %d, probe %d)", cmd, cr.exit, i), URL: FileURL(cr.log)}},
				err:  baton.Errorf(baton.Unavailable, "probe %d of `%s` failed after %s (exit %d): %s", i, cmd, time.Since(start).Round(time.Millisecond), cr.exit, cr.tail),
			}
		}
		if time.Since(start)+every > window {
			return outcome{note: fmt.Sprintf("%d probe(s) of `%s` passed over %s", i, cmd, time.Since(start).Round(time.Millisecond))}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return outcome{err: ctx.Err()}
		case <-t.C:
		}
	}
}
