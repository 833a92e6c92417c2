package delivery

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Action is a state machine input.
type Action string

// Actions. Person actions come from the CLI; system actions from the
// phase runner and the reconciler.
const (
	ActRun     Action = "run"     // claim the pending phase: pending → running
	ActForward Action = "forward" // the running phase finished with an outcome
	ActFail    Action = "fail"    // the running phase failed
	ActApprove Action = "approve" // start a waiting checkpoint phase, or accept a result
	ActReject  Action = "reject"  // send the delivery back (plan → plan, implement → plan, review/verify/deploy → implement)
	ActRetry   Action = "retry"   // run a failed or blocked phase again
	ActCancel  Action = "cancel"  // stop the running attempt; its late result is discarded
	ActClose   Action = "close"   // end the delivery where it stands
	ActLose    Action = "lose"    // the running attempt's worker died
	ActRelease Action = "release" // the worker is stopping: the attempt goes back to the queue
	// ActFeedback is a person's feedback from GitHub (a comment that
	// mentions baton, a review requesting changes): back to implement (or
	// plan) to act on it. See FeedbackFits.
	ActFeedback Action = "feedback"
)

// Actions lists every action, for table tests and help.
var Actions = []Action{ActRun, ActForward, ActFail, ActApprove, ActReject, ActRetry, ActCancel, ActClose, ActLose, ActRelease, ActFeedback}

// The notes of a checkpoint phase waiting for a person to start it, and
// of its start: the words the dashboard's Start button and the phase
// log share.
const (
	checkpointNote = "checkpoint: waiting for a person to start it"
	startedNote    = "started"
)

// Decisions: what a person decided, as a phase log entry records it
// (baton.PhaseLogEntry.Decision).
const (
	DecisionStarted  = "started"
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
	DecisionRetried  = "retried"
	DecisionCanceled = "canceled"
	DecisionClosed   = "closed"
)

// decisions are the actions a person decides with, and their words; a
// start is an approve of a phase that waits to be started.
var decisions = map[Action]string{
	ActApprove: DecisionApproved, ActReject: DecisionRejected, ActRetry: DecisionRetried,
	ActCancel: DecisionCanceled, ActClose: DecisionClosed,
}

// MaxLostAttempts is how many attempts of one phase may lose their worker
// before the phase fails instead of being queued again.
const MaxLostAttempts = 2

// Input is one action with what it carries.
type Input struct {
	Action Action
	// Actor is who acts: a person's name, a worker id, or "system".
	Actor string
	// Person is true when Actor is a person (CLI), false for the system.
	Person bool
	Now    time.Time
	// Attempt is the attempt a forward or fail reports on; it must be the
	// delivery's current attempt, so a canceled attempt's result is
	// refused.
	Attempt int64
	// Outcome of a forward.
	Verdict baton.Verdict
	Skipped bool
	// Block makes a forward's outcome wait for a person instead of moving
	// on: the phase is blocked with Note as the reason (an implement
	// whose agent changed nothing).
	Block bool
	// Note explains: a failure, a skip reason, a reject reason, a verdict
	// summary.
	Note string
	// Reason is the reason a person gave with their decision, as they
	// wrote it: the phase log keeps it apart from the note, which may add
	// what the pipeline says of the change.
	Reason string
	// Refs are added to the delivery (work, review, check refs).
	Refs []baton.Ref
	// Round is what the round a not_pass verdict ends did (the work tree
	// reviewed or verified, the feedback or the failed checks), for the
	// stall rule; nil leaves the rule out.
	Round *baton.Round
	// Config, on a retry or a person's run, is how the delivery runs
	// from now on (another agent, model or agent arguments); nil keeps it.
	Config *baton.DeliveryConfig
	// On, for a person's decision, is the state they decided on: the
	// action applies only while the delivery is in it. The zero State
	// applies to any.
	On State
}

// Result is the new state, the log entries to append in order, and
// whether a job must be queued for the new pending phase.
type Result struct {
	Delivery baton.Delivery
	Log      []baton.PhaseLogEntry
	Enqueue  bool
}

// Apply computes what in does to d. It is pure: d is not modified. Errors
// are Conflict (the action does not apply to the delivery's state; the
// message says what would) or Invalid (a malformed input).
func Apply(d baton.Delivery, in Input) (Result, error) {
	d.Refs = slices.Clone(d.Refs)
	d.Checkpoints = slices.Clone(d.Checkpoints)
	m := &machine{d: d, in: in}
	if err := m.apply(); err != nil {
		return Result{}, err
	}
	for _, r := range in.Refs {
		m.d.AddRef(r)
	}
	// Every action moves the delivery: only a cancel leaves it canceled.
	m.d.Canceled = in.Action == ActCancel
	m.d.UpdatedAt = in.Now
	return Result{Delivery: m.d, Log: m.log, Enqueue: m.enqueue}, nil
}

type machine struct {
	d       baton.Delivery
	in      Input
	log     []baton.PhaseLogEntry
	enqueue bool
}

func (m *machine) conflict(format string, args ...any) error {
	return baton.Errorf(baton.Conflict, "delivery %s is %s: %s", m.d.ID, m.d.String(), fmt.Sprintf(format, args...))
}

// actions maps each action to the method that applies it.
var actions = map[Action]func(*machine) error{
	ActRun:      (*machine).run,
	ActForward:  (*machine).finish,
	ActFail:     (*machine).finish,
	ActApprove:  (*machine).approve,
	ActReject:   (*machine).reject,
	ActRetry:    (*machine).retry,
	ActCancel:   (*machine).cancel,
	ActClose:    (*machine).close,
	ActRelease:  (*machine).release,
	ActLose:     (*machine).lose,
	ActFeedback: (*machine).feedback,
}

func (m *machine) apply() error {
	if m.d.Phase == baton.PhaseClose {
		return m.conflict("it is closed; nothing can change it")
	}
	act, ok := actions[m.in.Action]
	if !ok {
		return baton.Errorf(baton.Invalid, "unknown action %q", m.in.Action)
	}
	if on := m.in.On; !on.IsZero() && !on.same(&m.d) {
		return movedError(&m.d, on)
	}
	return act(m)
}

// run claims the pending phase: pending → running, the next attempt.
func (m *machine) run() error {
	d, in := &m.d, m.in
	if d.RunStatus != baton.StatusPending || !d.Phase.Runnable() {
		return m.conflict("only a pending phase can be run")
	}
	if !in.Person && !d.Queued {
		return m.conflict("%s is a checkpoint waiting for a person: `baton delivery approve %s` starts it", d.Phase, d.ID)
	}
	if in.Config != nil && !in.Person {
		return baton.Errorf(baton.Invalid, "only a person's run may change the agent")
	}
	d.RunStatus = baton.StatusRunning
	d.Attempt++
	d.Queued = false
	d.Error = ""
	d.Owner = in.Actor
	d.HeartbeatAt = in.Now
	m.entry(baton.StatusRunning, "", m.reconfigure(""))
	return nil
}

// finish records the running attempt's end: a failure, or an outcome
// (forward). A result for an attempt that is no longer running is
// refused, so a canceled or lost attempt's late result is discarded.
func (m *machine) finish() error {
	d, in := &m.d, m.in
	if d.RunStatus != baton.StatusRunning || in.Attempt != d.Attempt {
		return m.conflict("attempt %d is not running (it was canceled or lost); its result is discarded", in.Attempt)
	}
	d.Owner = ""
	if in.Action == ActFail {
		d.RunStatus = baton.StatusFailed
		d.Error = in.Note
		m.entry(baton.StatusFailed, "", in.Note)
		return nil
	}
	return m.forward()
}

// approve starts a waiting checkpoint phase, or accepts a phase's result
// (succeeded, or blocked by a not_pass verdict) and moves on.
func (m *machine) approve() error {
	d := &m.d
	switch d.RunStatus {
	case baton.StatusPending:
		if !d.Phase.Runnable() {
			return m.conflict("%s has no run to start", d.Phase)
		}
		if d.Queued {
			return m.conflict("it is already queued for a worker")
		}
		d.Queued = true
		m.enqueue = true
		m.entry(baton.StatusPending, "", startedNote)
		m.log[len(m.log)-1].Decision = DecisionStarted
		return nil
	case baton.StatusSucceeded:
		m.advance("approved")
		return nil
	case baton.StatusBlocked:
		m.advance("approved over: " + d.Error)
		return nil
	case baton.StatusRunning:
		return m.conflict("wait for the run to finish, or cancel it")
	}
	return m.conflict("a failed phase is retried (`baton delivery retry %s`) or rejected, not approved", d.ID)
}

// reject sends the delivery back with a reason: plan and implement to
// plan; review, verify and deploy to implement. Like approve, it is a
// decision on a phase that waits for a person (or failed): refused while
// the phase is queued or running.
func (m *machine) reject() error {
	d, in := &m.d, m.in
	if strings.TrimSpace(in.Note) == "" {
		return baton.Errorf(baton.Invalid, "reject needs a reason: it is posted where the next run reads it")
	}
	if d.RunStatus == baton.StatusRunning {
		return m.conflict("cancel the run first (`baton delivery cancel %s`)", d.ID)
	}
	if d.RunStatus == baton.StatusPending && d.Queued {
		// A queued phase waits for a worker, not for a decision: the
		// decision that queued it was the one made on the phase before,
		// and a second one racing it must lose, not send it back again.
		return m.conflict("it is queued for a worker, not waiting for a decision: reject its result once it has run, or cancel it while it runs")
	}
	var target baton.Phase
	switch d.Phase {
	case baton.PhasePlan, baton.PhaseImplement:
		target = baton.PhasePlan
	case baton.PhaseReview, baton.PhaseVerify:
		target = baton.PhaseImplement
	case baton.PhaseDeploy:
		if d.RunStatus == baton.StatusSucceeded {
			return m.conflict("the work is already deployed")
		}
		target = baton.PhaseImplement
	default:
		return m.conflict("only plan, implement, review, verify and deploy can be rejected")
	}
	d.Error = ""
	m.enter(target, in.Note, true)
	return nil
}

// FeedbackFit is what a person's feedback can do to a delivery now.
type FeedbackFit int

const (
	// FeedbackApplies: the delivery goes back to implement (plan, before
	// its plan was taken) with the feedback as a review ref.
	FeedbackApplies FeedbackFit = iota
	// FeedbackWaits: a phase is running, or an implement round is queued;
	// the feedback applies once it has run, so each piece of feedback is
	// a round of its own.
	FeedbackWaits
	// FeedbackIgnored: the delivery is closed, or its work is merged.
	FeedbackIgnored
)

// FeedbackFits says what feedback does to d now, and why when it does not
// apply:
//
//   - closed: ignored (a closed delivery is not reopened);
//   - observe (the work is merged): ignored;
//   - running, or implement queued for a worker: waits;
//   - plan not running (queued, waiting at its checkpoint, failed): the
//     plan runs again with the feedback, so no code is written before a
//     plan was taken;
//   - anything else not running (implement waiting or failed; review,
//     verify or deploy queued, waiting, failed or blocked): back to
//     implement, queued. A queued phase is dropped for it.
func FeedbackFits(d baton.Delivery) (FeedbackFit, string) {
	switch {
	case d.Phase == baton.PhaseClose:
		return FeedbackIgnored, fmt.Sprintf("delivery %s is closed, and a closed delivery is not reopened: open a new issue", d.ID)
	case d.Phase == baton.PhaseObserve:
		return FeedbackIgnored, fmt.Sprintf("delivery %s's work is merged (it is at observe): open a new issue for more", d.ID)
	case d.RunStatus == baton.StatusRunning:
		return FeedbackWaits, fmt.Sprintf("delivery %s is running %s: the feedback applies when it ends", d.ID, d.Phase)
	case d.Phase == baton.PhaseImplement && d.RunStatus == baton.StatusPending && d.Queued:
		return FeedbackWaits, fmt.Sprintf("delivery %s has an implement round queued: the feedback gets a round of its own after it", d.ID)
	case d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusPending && d.Queued:
		return FeedbackWaits, fmt.Sprintf("delivery %s has its plan queued: the feedback applies once the plan has run", d.ID)
	}
	return FeedbackApplies, ""
}

// feedback sends the delivery back to act on a person's feedback from
// GitHub (its review ref comes in the input): plan runs again when no plan
// was taken yet, else implement; queued either way. Rounds do not count
// it: a person asked.
func (m *machine) feedback() error {
	d := &m.d
	fit, why := FeedbackFits(*d)
	if fit != FeedbackApplies {
		return m.conflict("%s", why)
	}
	target := baton.PhaseImplement
	if d.Phase == baton.PhasePlan || d.Phase == baton.PhaseIntake {
		target = baton.PhasePlan
	}
	d.Error = ""
	d.Lost = 0
	m.enter(target, m.in.Note, true)
	return nil
}

// retry queues a failed or blocked phase again.
func (m *machine) retry() error {
	d := &m.d
	if d.RunStatus != baton.StatusFailed && d.RunStatus != baton.StatusBlocked || !d.Phase.Runnable() {
		return m.conflict("only a failed or blocked phase is retried")
	}
	d.Error = ""
	d.Lost = 0
	m.enter(d.Phase, m.reconfigure(m.in.Note), true)
	return nil
}

// reconfigure applies the input's Config, when it has one, and returns
// note with the change said, for the phase log.
func (m *machine) reconfigure(note string) string {
	d, c := &m.d, m.in.Config
	if c == nil {
		return note
	}
	if c.Agent != d.Config.Agent || c.Model != d.Config.Model || !slices.Equal(c.AgentArgs, d.Config.AgentArgs) {
		note = strings.TrimSpace(note + " (agent now " + c.Agent + ifModel(c.Model) + ")")
	}
	d.Config = *c
	return note
}

func ifModel(m string) string {
	if m == "" {
		return ""
	}
	return ", model " + m
}

// cancel stops the running attempt: it fails, and its late result is
// discarded.
func (m *machine) cancel() error {
	d := &m.d
	if d.RunStatus != baton.StatusRunning {
		return m.conflict("only a running phase can be canceled")
	}
	d.RunStatus = baton.StatusFailed
	d.Owner = ""
	d.Error = "canceled by " + m.in.Actor
	if r := strings.TrimSpace(m.in.Note); r != "" {
		d.Error += ": " + r
	}
	m.entry(baton.StatusFailed, "", d.Error)
	return nil
}

// close ends the delivery where it stands: succeeded when its endpoint
// succeeded, failed otherwise.
func (m *machine) close() error {
	d, in := &m.d, m.in
	if d.RunStatus == baton.StatusRunning {
		return m.conflict("cancel the run first (`baton delivery cancel %s`)", d.ID)
	}
	note := fmt.Sprintf("closed by %s at %s", in.Actor, d.String())
	if in.Note != "" {
		note += ": " + in.Note
	}
	status := baton.StatusFailed
	if d.Phase == d.Endpoint && d.RunStatus == baton.StatusSucceeded {
		status = baton.StatusSucceeded
	}
	d.Phase, d.RunStatus, d.Queued = baton.PhaseClose, status, false
	if status == baton.StatusFailed {
		d.Error = note
	}
	m.entryEnded(status, "", note)
	return nil
}

// release hands a stopping worker's attempt back to the queue.
func (m *machine) release() error {
	d, in := &m.d, m.in
	if d.RunStatus != baton.StatusRunning || in.Attempt != d.Attempt {
		return m.conflict("attempt %d is not running", in.Attempt)
	}
	d.Owner = ""
	note := "released: " + in.Actor + " stopped before the run finished"
	if in.Note != "" {
		note = in.Note
	}
	m.enter(d.Phase, note, true)
	return nil
}

// lose records that the running attempt's worker died: the phase is
// queued again, or fails after MaxLostAttempts.
func (m *machine) lose() error {
	d, in := &m.d, m.in
	if d.RunStatus != baton.StatusRunning || in.Attempt != d.Attempt {
		return m.conflict("attempt %d is not running", in.Attempt)
	}
	d.Owner = ""
	note := "the worker running attempt " + fmt.Sprint(d.Attempt) + " died"
	if in.Note != "" {
		note = in.Note
	}
	d.Lost++
	if d.Lost >= MaxLostAttempts {
		d.RunStatus = baton.StatusFailed
		d.Error = fmt.Sprintf("%s; %d attempts lost their worker, so it is not retried again: `baton delivery retry %s`", note, d.Lost, d.ID)
		m.entry(baton.StatusFailed, "", d.Error)
		return nil
	}
	// A lost attempt was already started by whoever started it, so it is
	// queued again even at a checkpoint.
	m.enter(d.Phase, note+"; queued again", true)
	return nil
}

// forward records the running phase's outcome and moves on.
func (m *machine) forward() error {
	d, in := &m.d, m.in
	d.Lost = 0
	switch {
	case in.Skipped:
		if d.Phase.Executor() == baton.ExecutorAgent {
			return baton.Errorf(baton.Invalid, "agent phase %s cannot be skipped", d.Phase)
		}
		m.entry(baton.StatusSkipped, "", in.Note)
		m.advance("")
		return nil
	case in.Block:
		if in.Verdict != "" {
			return baton.Errorf(baton.Invalid, "a blocked outcome has no verdict")
		}
		d.RunStatus = baton.StatusBlocked
		d.Error = in.Note
		m.entry(baton.StatusBlocked, "", in.Note)
		return nil
	case in.Verdict == baton.VerdictNotPass:
		if d.Phase != baton.PhaseReview && d.Phase != baton.PhaseVerify {
			return baton.Errorf(baton.Invalid, "phase %s has no verdict", d.Phase)
		}
		m.entry(baton.StatusSucceeded, baton.VerdictNotPass, in.Note)
		why := fmt.Sprintf("%s: not_pass", d.Phase)
		if in.Note != "" {
			why += ": " + in.Note
		}
		if d.IsCheckpoint(d.Phase) {
			d.RunStatus = baton.StatusBlocked
			d.Error = why
			m.entry(baton.StatusBlocked, "", "checkpoint: approve to override, reject to send back to implement")
			return nil
		}
		if in.Round != nil {
			var stalled string
			d.Stall, stalled = d.Stall.Next(*in.Round, d.Config.StallRounds)
			if stalled != "" {
				d.RunStatus = baton.StatusBlocked
				d.Error = fmt.Sprintf("stalled: %s; %s", stalled, why)
				m.entry(baton.StatusBlocked, "", "stalled: "+stalled+": a person decides (reject with a note sends it back to implement, approve overrides the verdict)")
				return nil
			}
		}
		switch {
		case d.Config.MaxRounds > 0 && d.Rounds >= d.Config.MaxRounds:
			d.RunStatus = baton.StatusBlocked
			d.Error = fmt.Sprintf("%s (round limit %d reached)", why, d.Config.MaxRounds)
			m.entry(baton.StatusBlocked, "", fmt.Sprintf("round limit %d reached: a person decides", d.Config.MaxRounds))
			return nil
		}
		d.Rounds++
		m.enter(baton.PhaseImplement, fmt.Sprintf("%s not_pass: back to implement (round %d)", d.Phase, d.Rounds), false)
		return nil
	case in.Verdict == baton.VerdictPass && d.Phase != baton.PhaseReview && d.Phase != baton.PhaseVerify:
		return baton.Errorf(baton.Invalid, "phase %s has no verdict", d.Phase)
	case in.Verdict != "" && in.Verdict != baton.VerdictPass:
		return baton.Errorf(baton.Invalid, "unknown verdict %q", in.Verdict)
	}
	m.entry(baton.StatusSucceeded, in.Verdict, in.Note)
	if d.IsCheckpoint(d.Phase) {
		d.RunStatus = baton.StatusSucceeded
		return nil
	}
	m.advance("")
	return nil
}

// advance leaves the current phase for the next one (close after the
// endpoint).
func (m *machine) advance(note string) {
	d := &m.d
	next := d.Phase.Next()
	if d.Phase == d.Endpoint {
		next = baton.PhaseClose
	}
	d.Error = ""
	if next == baton.PhaseClose {
		d.Phase, d.RunStatus, d.Queued = baton.PhaseClose, baton.StatusSucceeded, false
		if note == "" {
			note = "delivered"
		}
		m.entryEnded(baton.StatusSucceeded, "", note)
		return
	}
	m.enter(next, note, m.in.Person)
}

// enter makes p the pending phase. A checkpoint phase entered by the
// system waits for a person; anything else is queued.
func (m *machine) enter(p baton.Phase, note string, byPerson bool) {
	d := &m.d
	d.Phase, d.RunStatus = p, baton.StatusPending
	d.Queued = byPerson || !d.IsCheckpoint(p)
	m.enqueue = d.Queued
	if !d.Queued {
		if note != "" {
			note += "; "
		}
		note += checkpointNote
	}
	m.entry(baton.StatusPending, "", note)
}

func (m *machine) entry(status baton.RunStatus, v baton.Verdict, note string) {
	d := &m.d
	e := baton.PhaseLogEntry{
		Phase:     d.Phase,
		Status:    status,
		Executor:  d.Phase.Executor(),
		Verdict:   v,
		Actor:     m.in.Actor,
		Action:    string(m.in.Action),
		Note:      note,
		Waits:     status == baton.StatusPending && !d.Queued,
		Attempt:   d.Attempt,
		StartedAt: m.in.Now,
	}
	if word, ok := decisions[m.in.Action]; ok && m.in.Person {
		e.Decision, e.Reason = word, strings.TrimSpace(m.in.Reason)
	}
	m.log = append(m.log, e)
}

// entryEnded appends a terminal entry, ended as it starts.
func (m *machine) entryEnded(status baton.RunStatus, v baton.Verdict, note string) {
	m.entry(status, v, note)
	m.log[len(m.log)-1].EndedAt = m.in.Now
}

// NewDelivery returns a delivery created by actor: intake is done at
// once (logged as succeeded) and plan is entered as the creator's own
// action, so it is queued.
func NewDelivery(d baton.Delivery, actor string, now time.Time) Result {
	d.Phase, d.RunStatus = baton.PhaseIntake, baton.StatusRunning
	d.CreatedAt, d.UpdatedAt = now, now
	m := &machine{d: d, in: Input{Action: "create", Actor: actor, Person: true, Now: now}}
	m.entry(baton.StatusSucceeded, "", "created")
	m.enter(baton.PhasePlan, "", true)
	return Result{Delivery: m.d, Log: m.log, Enqueue: m.enqueue}
}
