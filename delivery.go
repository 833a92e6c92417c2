package baton

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Phase is a step of a delivery, in order from intake to close.
type Phase string

const (
	PhaseIntake    Phase = "intake"
	PhasePlan      Phase = "plan"
	PhaseImplement Phase = "implement"
	PhaseReview    Phase = "review"
	PhaseVerify    Phase = "verify"
	PhaseDeploy    Phase = "deploy"
	PhaseObserve   Phase = "observe"
	PhaseClose     Phase = "close"
)

// Phases lists every phase in pipeline order.
var Phases = []Phase{PhaseIntake, PhasePlan, PhaseImplement, PhaseReview, PhaseVerify, PhaseDeploy, PhaseObserve, PhaseClose}

// ParsePhase returns the phase named s, or Invalid.
func ParsePhase(s string) (Phase, error) {
	p := Phase(strings.ToLower(strings.TrimSpace(s)))
	if p.Valid() {
		return p, nil
	}
	return "", Errorf(Invalid, "unknown phase %q: want one of %s", Truncate(s, 40, "…"), phaseNames(Phases))
}

// Valid reports whether p is one of the eight phases.
func (p Phase) Valid() bool { return slices.Contains(Phases, p) }

// Index is p's position in Phases, -1 when p is not a phase.
func (p Phase) Index() int { return slices.Index(Phases, p) }

// Next is the phase after p; close is followed by close.
func (p Phase) Next() Phase {
	i := p.Index()
	if i < 0 || i+1 >= len(Phases) {
		return PhaseClose
	}
	return Phases[i+1]
}

// Executor says who does a phase's work.
type Executor string

const (
	ExecutorAgent  Executor = "agent"  // plan, implement, review: a coding agent
	ExecutorSystem Executor = "system" // intake, verify, deploy, observe, close: baton itself
)

// Executor returns who runs phase p.
func (p Phase) Executor() Executor {
	switch p {
	case PhasePlan, PhaseImplement, PhaseReview:
		return ExecutorAgent
	}
	return ExecutorSystem
}

// Runnable reports whether p has work that a worker runs: every phase but
// intake (done at create) and close (terminal).
func (p Phase) Runnable() bool { return p != PhaseIntake && p != PhaseClose && p.Valid() }

// RunStatus is where the current phase's run is.
type RunStatus string

const (
	StatusPending   RunStatus = "pending"   // waiting for a worker, or for a person at a checkpoint
	StatusRunning   RunStatus = "running"   // claimed by one worker; exactly one attempt at a time
	StatusSucceeded RunStatus = "succeeded" // done; at a checkpoint, waiting for approve
	StatusFailed    RunStatus = "failed"    // the run failed or was canceled; retry runs it again
	StatusBlocked   RunStatus = "blocked"   // a not_pass verdict held by a checkpoint or the round limit: a person decides
	// StatusSkipped appears only in the phase log: a system phase that had
	// nothing to do, with the reason in the entry's note. A delivery's
	// run_status is never skipped.
	StatusSkipped RunStatus = "skipped"
)

// Valid reports whether s is a delivery run status (not skipped).
func (s RunStatus) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusSucceeded, StatusFailed, StatusBlocked:
		return true
	}
	return false
}

// RunStatuses lists the delivery run statuses.
var RunStatuses = []RunStatus{StatusPending, StatusRunning, StatusSucceeded, StatusFailed, StatusBlocked}

// Verdict is the outcome of a review or a verify: pass, or not_pass with
// feedback. Other phases have no verdict ("").
type Verdict string

const (
	VerdictPass    Verdict = "pass"
	VerdictNotPass Verdict = "not_pass"
)

// Forge says where a delivery's repository lives and so how branches,
// reviews, checks and merges are done.
type Forge string

const (
	ForgeLocal  Forge = "local"  // a git repository on this machine
	ForgeGitHub Forge = "github" // a GitHub repository, owner/name
)

// MergeMethod is how deploy lands the work branch on the base branch.
type MergeMethod string

const (
	MergeSquash MergeMethod = "squash"
	MergeCommit MergeMethod = "merge"
	MergeRebase MergeMethod = "rebase"
)

// DraftMode says whether the forge opens the work pull request as a draft.
type DraftMode string

const (
	// DraftAuto opens a draft, or a ready pull request where the
	// repository has no drafts (private repositories on GitHub Free and
	// Pro). The empty mode means auto.
	DraftAuto DraftMode = "auto"
	// DraftAlways opens a draft or none.
	DraftAlways DraftMode = "always"
	// DraftNever opens a ready pull request.
	DraftNever DraftMode = "never"
)

// ParseDraftMode returns the draft mode named s ("" is auto), or Invalid.
func ParseDraftMode(s string) (DraftMode, error) {
	switch m := DraftMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", DraftAuto:
		return DraftAuto, nil
	case DraftAlways, DraftNever:
		return m, nil
	}
	return "", Errorf(Invalid, "bad draft setting %q: want auto, always or never", Truncate(s, 40, "…"))
}

// Defaults of a delivery.
const (
	DefaultAgent         = "claude"
	DefaultPhaseTimeout  = 60 * time.Minute
	DefaultMaxRounds     = 5
	DefaultObserveWindow = 5 * time.Minute
	DefaultObserveEvery  = 30 * time.Second
)

// DefaultCheckpoints are the phases that wait for a person unless the
// delivery says otherwise: the plan (read it before code is written) and
// deploy (a person decides when code lands on the base branch, because
// deploy really merges).
var DefaultCheckpoints = []Phase{PhasePlan, PhaseDeploy}

// DefaultEndpoint is the last phase before close.
const DefaultEndpoint = PhaseObserve

// DeliveryConfig is how a delivery runs, fixed at create.
type DeliveryConfig struct {
	// Agent is the executor: claude, codex, droid, pi or command:<argv>.
	Agent string `json:"agent"`
	Model string `json:"model,omitempty"`
	// PhaseTimeout bounds each agent or command run; PhaseTimeouts
	// overrides it for single phases (Timeout reads both).
	PhaseTimeout  time.Duration           `json:"phase_timeout"`
	PhaseTimeouts map[Phase]time.Duration `json:"phase_timeouts,omitempty"`
	// AgentArgs are appended to the agent's command line (tool
	// allow-lists, permission modes, profiles).
	AgentArgs []string `json:"agent_args,omitempty"`
	// PassEnv names secrets of baton's environment (GH_TOKEN,
	// GITHUB_TOKEN, BATON_ credentials) that agents and commands get
	// anyway; by default they get none.
	PassEnv []string `json:"pass_env,omitempty"`
	// EgressAllow adds hosts to what the agents' and commands' box may
	// reach over the network (host, host:port, *.domain or a URL), beyond
	// the server's allowlist and the agent's model API.
	EgressAllow []string `json:"egress_allow,omitempty"`
	// BaseBranch is what the work branch starts from and merges into;
	// empty means the repository's default branch (resolved at plan).
	BaseBranch string `json:"base_branch,omitempty"`
	// VerifyCommand, DeployCommand and ObserveCommand are argv strings
	// (split like a shell would, never run by one). Empty verify on the
	// local forge skips verify; empty deploy merges; empty observe skips.
	VerifyCommand  string        `json:"verify_command,omitempty"`
	DeployCommand  string        `json:"deploy_command,omitempty"`
	ObserveCommand string        `json:"observe_command,omitempty"`
	ObserveWindow  time.Duration `json:"observe_window,omitempty"`
	ObserveEvery   time.Duration `json:"observe_every,omitempty"`
	MergeMethod    MergeMethod   `json:"merge_method,omitempty"`
	// Draft says whether the work pull request opens as a draft ("" is
	// auto).
	Draft DraftMode `json:"draft,omitempty"`
	// MaxRounds bounds how often review or verify may send the delivery
	// back to implement before it is blocked for a person.
	MaxRounds int `json:"max_rounds"`
	// StallRounds is how many rounds in a row without progress (the same
	// work tree, check and feedback) block the delivery for a person; 0
	// is DefaultStallRounds.
	StallRounds int `json:"stall_rounds,omitempty"`
	// Setup are shell commands that make a worktree ready (install
	// dependencies): run, confined, before the first agent phase, again
	// when one of SetupFiles changes, and before the verify command in
	// verify's fresh checkout. Empty SetupFiles means DefaultSetupFiles.
	Setup      []string `json:"setup,omitempty"`
	SetupFiles []string `json:"setup_files,omitempty"`
	// SetupEgressAllow adds hosts only the set-up's box may reach (a
	// package registry), as EgressAllow does for every box.
	SetupEgressAllow []string `json:"setup_egress_allow,omitempty"`
}

// DefaultSetupFiles are the lock and manifest files whose change runs a
// delivery's set-up again: those of the common package managers.
var DefaultSetupFiles = []string{
	"go.mod", "go.sum", "package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "bun.lockb", "bun.lock",
	"Cargo.lock", "requirements.txt", "poetry.lock", "uv.lock", "Pipfile.lock", "Gemfile.lock", "composer.lock",
}

// Delivery is one unit of work from a request to a merged change.
type Delivery struct {
	ID          string         `json:"id"`
	Seq         int64          `json:"seq"`
	Summary     string         `json:"summary"`
	Repository  string         `json:"repository"` // owner/name on GitHub, an absolute path locally
	Forge       Forge          `json:"forge"`
	Phase       Phase          `json:"phase"`
	RunStatus   RunStatus      `json:"run_status"`
	Endpoint    Phase          `json:"endpoint"`
	Checkpoints []Phase        `json:"checkpoints"`
	Refs        []Ref          `json:"refs"`
	Config      DeliveryConfig `json:"config"`
	// Error says why the current phase failed or is blocked.
	Error string `json:"error,omitempty"`
	// Canceled says the current phase failed because a person canceled
	// it, not by its own failure; it clears when the delivery moves on.
	Canceled bool `json:"canceled,omitempty"`
	// Queued is set while a job for the pending phase is in the queue; a
	// pending checkpoint phase is not queued until a person starts it.
	Queued bool `json:"queued"`
	// Attempt counts claims; the running attempt's results count only if
	// it is still the delivery's attempt when they arrive.
	Attempt int64 `json:"attempt"`
	// Rounds counts returns from review or verify to implement.
	Rounds int `json:"rounds"`
	// Stall is what the stall rule remembers of the rounds (Stall.Next).
	Stall Stall `json:"stall,omitzero"`
	// Lost counts attempts of the current phase whose worker died.
	Lost int `json:"lost"`
	// Version increases with every change; updates are conditional on it.
	Version int64 `json:"version"`
	// Owner and HeartbeatAt identify and date the worker running the
	// phase; a running delivery whose heartbeat is older than the lease has
	// lost its worker.
	Owner       string    `json:"owner,omitempty"`
	HeartbeatAt time.Time `json:"heartbeat_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// DeliveryID is the id of the delivery for a request in a repository: the
// first 12 hex digits of sha256("<repository>:<request key>"). The same
// repository and request always give the same id, which makes create
// idempotent.
func DeliveryID(repository, requestKey string) string {
	sum := sha256.Sum256([]byte(repository + ":" + requestKey))
	return hex.EncodeToString(sum[:])[:12]
}

// Title is the first line of the summary: what lists, pull requests and
// commit messages call the delivery.
func (d *Delivery) Title() string {
	t, _, _ := strings.Cut(strings.TrimSpace(d.Summary), "\n")
	return t
}

// WaitsForPerson reports whether nothing happens to the delivery until a
// person acts: a checkpoint phase not yet started, a result to approve, or
// a failed or blocked phase to retry, reject or close. A queued or running
// phase waits for a worker, and a closed delivery for no one.
func (d *Delivery) WaitsForPerson() bool {
	if d.Phase == PhaseClose {
		return false
	}
	switch d.RunStatus {
	case StatusPending:
		return !d.Queued && d.Phase.Runnable()
	case StatusSucceeded, StatusFailed, StatusBlocked:
		return true
	}
	return false
}

// WorkBranch is the branch a delivery's work happens on.
func (d *Delivery) WorkBranch() string { return "baton/" + d.ID }

// IsCheckpoint reports whether p waits for a person.
func (d *Delivery) IsCheckpoint(p Phase) bool { return slices.Contains(d.Checkpoints, p) }

// Ref returns the last ref with role and, when typ is not empty, type.
func (d *Delivery) Ref(role RefRole, typ string) (Ref, bool) {
	for i := len(d.Refs) - 1; i >= 0; i-- {
		r := d.Refs[i]
		if r.Role == role && (typ == "" || r.Type == typ) {
			return r, true
		}
	}
	return Ref{}, false
}

// AddRef appends r. A work ref replaces an earlier work ref of the same
// type (a new PR replaces the old PR, the branch stays); every other ref
// is appended unless the same role, type and URL are already there.
func (d *Delivery) AddRef(r Ref) {
	for i, old := range d.Refs {
		if r.Role == RoleWork && old.Role == RoleWork && old.Type == r.Type {
			d.Refs[i] = r
			return
		}
		if old.Role == r.Role && old.Type == r.Type && old.URL == r.URL && r.URL != "" && (r.Type != RefReviewLine || old.Label == r.Label) {
			d.Refs[i] = r
			return
		}
	}
	d.Refs = append(d.Refs, r)
}

// Validate checks a delivery's invariants: known phase, status, forge and
// endpoint; checkpoints are runnable phases; the endpoint is a runnable
// phase after plan; configured commands sit before the endpoint.
func (d *Delivery) Validate() error {
	if err := CheckID("delivery", d.ID); err != nil {
		return err
	}
	if strings.TrimSpace(d.Summary) == "" {
		return Errorf(Invalid, "delivery %s has no summary", d.ID)
	}
	if d.Repository == "" {
		return Errorf(Invalid, "delivery %s has no repository", d.ID)
	}
	if d.Forge != ForgeLocal && d.Forge != ForgeGitHub {
		return Errorf(Invalid, "delivery %s: unknown forge %q", d.ID, d.Forge)
	}
	if !d.Phase.Valid() {
		return Errorf(Invalid, "delivery %s: unknown phase %q", d.ID, d.Phase)
	}
	if !d.RunStatus.Valid() {
		return Errorf(Invalid, "delivery %s: unknown run status %q", d.ID, d.RunStatus)
	}
	if err := CheckEndpoint(d.Endpoint); err != nil {
		return err
	}
	for _, p := range d.Checkpoints {
		if !p.Runnable() {
			return Errorf(Invalid, "checkpoint %q is not a phase a person can gate: want some of %s", p, phaseNames(runnablePhases()))
		}
	}
	c := d.Config
	for _, cmd := range []struct {
		flag  string
		value string
		phase Phase
	}{{"--verify", c.VerifyCommand, PhaseVerify}, {"--deploy", c.DeployCommand, PhaseDeploy}, {"--observe", c.ObserveCommand, PhaseObserve}} {
		if cmd.value != "" && cmd.phase.Index() > d.Endpoint.Index() {
			return Errorf(Invalid, "%s is set but the endpoint %s ends the delivery before %s: raise --endpoint or drop %s", cmd.flag, d.Endpoint, cmd.phase, cmd.flag)
		}
	}
	switch c.MergeMethod {
	case "", MergeSquash, MergeCommit, MergeRebase:
	default:
		return Errorf(Invalid, "unknown merge method %q: want squash, merge or rebase", c.MergeMethod)
	}
	switch c.Draft {
	case "", DraftAuto, DraftAlways, DraftNever:
	default:
		return Errorf(Invalid, "unknown draft setting %q: want auto, always or never", c.Draft)
	}
	if err := CheckStallRounds(c.StallRounds); err != nil {
		return err
	}
	if c.PhaseTimeout < 0 || c.ObserveWindow < 0 || c.ObserveEvery < 0 || c.MaxRounds < 0 {
		return Errorf(Invalid, "durations and limits must not be negative")
	}
	for p, t := range c.PhaseTimeouts {
		if !p.Runnable() || t <= 0 {
			return Errorf(Invalid, "bad timeout %s for phase %q", t, p)
		}
	}
	return nil
}

// Timeout is how long one run of phase p may take: its own timeout, else
// the delivery's, else DefaultPhaseTimeout.
func (c DeliveryConfig) Timeout(p Phase) time.Duration {
	if t := c.PhaseTimeouts[p]; t > 0 {
		return t
	}
	if c.PhaseTimeout > 0 {
		return c.PhaseTimeout
	}
	return DefaultPhaseTimeout
}

// ParseTimeouts parses a timeout setting: comma-separated items, each a
// duration ("45m", every phase) or PHASE=DURATION ("implement=90m").
// Durations must be positive; a phase may appear once, and so may the
// bare default. Errors are Invalid.
func ParseTimeouts(s string) (def time.Duration, per map[Phase]time.Duration, err error) {
	bad := func(format string, args ...any) (time.Duration, map[Phase]time.Duration, error) {
		return 0, nil, Errorf(Invalid, "bad timeout %q: %s (want 45m, or plan=10m,implement=90m)", Truncate(s, 80, "…"), fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(s) == "" {
		return bad("empty")
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, val, hasPhase := strings.Cut(item, "=")
		if !hasPhase {
			val = name
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil || d <= 0 {
			return bad("%q is not a positive duration", Truncate(val, 40, "…"))
		}
		if !hasPhase {
			if def != 0 {
				return bad("two defaults")
			}
			def = d
			continue
		}
		p, err := ParsePhase(name)
		if err != nil || !p.Runnable() {
			return bad("%q is not a phase that runs", Truncate(name, 40, "…"))
		}
		if per == nil {
			per = map[Phase]time.Duration{}
		}
		if _, dup := per[p]; dup {
			return bad("%s given twice", p)
		}
		per[p] = d
	}
	return def, per, nil
}

// CheckEndpoint validates an endpoint: a runnable phase from plan on.
func CheckEndpoint(p Phase) error {
	if !p.Runnable() {
		return Errorf(Invalid, "bad endpoint %q: want one of %s", p, phaseNames(runnablePhases()))
	}
	return nil
}

// ParseCheckpoints parses a comma-separated list of phases ("" or "none"
// means no checkpoint). Duplicates are dropped; order follows the pipeline.
func ParseCheckpoints(s string) ([]Phase, error) {
	s = strings.TrimSpace(s)
	out := []Phase{}
	if s == "" || strings.EqualFold(s, "none") {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := ParsePhase(part)
		if err != nil {
			return nil, err
		}
		if !p.Runnable() {
			return nil, Errorf(Invalid, "checkpoint %q is not a phase a person can gate: want some of %s", p, phaseNames(runnablePhases()))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Phase) int { return a.Index() - b.Index() })
	return out, nil
}

func runnablePhases() []Phase {
	var ps []Phase
	for _, p := range Phases {
		if p.Runnable() {
			ps = append(ps, p)
		}
	}
	return ps
}

func phaseNames(ps []Phase) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// PhaseLogEntry is one state a delivery was in: a phase and status from
// StartedAt until EndedAt (zero while it is the current state). Every
// change appends one, naming who caused it.
type PhaseLogEntry struct {
	ID       int64     `json:"id"`
	Phase    Phase     `json:"phase"`
	Status   RunStatus `json:"status"`
	Executor Executor  `json:"executor"`
	Verdict  Verdict   `json:"verdict,omitempty"`
	// Actor caused the change: a person ("alice"), a worker
	// ("worker:host:pid"), or "system".
	Actor string `json:"actor"`
	// Action is the state machine action that made the change.
	Action string `json:"action"`
	// Note says what the pipeline recorded of the change, for people to
	// read: a failure, a verdict's summary, why it waits. Programs read
	// the fields instead.
	Note string `json:"note,omitempty"`
	// Decision is what a person decided, when the entry records a
	// decision (started, approved, rejected, retried, canceled, closed;
	// "" when the pipeline moved on by itself). Actor is who decided.
	Decision string `json:"decision,omitempty"`
	// Reason is the reason the person gave with their decision, as they
	// wrote it.
	Reason string `json:"reason,omitempty"`
	// Waits is set on a pending entry whose phase waits for a person to
	// start it (a checkpoint), rather than for a worker.
	Waits     bool      `json:"waits_for_person,omitempty"`
	Attempt   int64     `json:"attempt,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Duration is how long the state lasted, up to now while it is current.
func (e PhaseLogEntry) Duration(now time.Time) time.Duration {
	end := e.EndedAt
	if end.IsZero() {
		end = now
	}
	return end.Sub(e.StartedAt)
}

// AgentRunStatus is where one agent run is.
type AgentRunStatus string

const (
	RunRunning   AgentRunStatus = "running"
	RunSucceeded AgentRunStatus = "succeeded"
	RunFailed    AgentRunStatus = "failed"
	RunCanceled  AgentRunStatus = "canceled"
)

// AgentRun is one agent invocation for a phase. It is written as running
// before the agent starts and finished after it ends, also when it fails,
// so nothing the agent produced is lost.
type AgentRun struct {
	ID           int64          `json:"id"`
	DeliveryID   string         `json:"delivery_id"`
	N            int            `json:"n"` // 1, 2, ... within the delivery
	Phase        Phase          `json:"phase"`
	Attempt      int64          `json:"attempt"`
	Agent        string         `json:"agent"`
	Status       AgentRunStatus `json:"status"`
	Prompt       string         `json:"prompt"`
	SystemPrompt string         `json:"system_prompt"`
	FinalMessage string         `json:"final_message,omitempty"`
	Model        string         `json:"model,omitempty"`
	SessionID    string         `json:"session_id,omitempty"`
	CostUSD      float64        `json:"cost_usd"`
	InputTokens  int64          `json:"input_tokens"`
	OutputTokens int64          `json:"output_tokens"`
	Duration     time.Duration  `json:"duration_ns"`
	ExitCode     int            `json:"exit_code"`
	Error        string         `json:"error,omitempty"`
	// LogDir holds the raw logs: prompt.txt, argv.json, events.jsonl or
	// stdout.log, stderr.log.
	LogDir    string    `json:"log_dir,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// SetupStatus is how a set-up ended.
type SetupStatus string

const (
	SetupSucceeded SetupStatus = "succeeded"
	// SetupFailed: a command exited non-zero or ran out of the phase's
	// time; the phase stopped before its agent or check began.
	SetupFailed SetupStatus = "failed"
	// SetupSkipped: it had run in the worktree already and neither its
	// commands nor the files it watches changed since.
	SetupSkipped SetupStatus = "skipped"
	// SetupCanceled: the phase was stopped (a person's cancel, a worker
	// that stopped) while it ran.
	SetupCanceled SetupStatus = "canceled"
)

// SetupRun is one set-up of a delivery's worktree, a step of its own
// before the phase it made ready: which commands ran, how it ended and
// the last of its output. It is written when the set-up ends.
type SetupRun struct {
	ID         int64  `json:"id"`
	DeliveryID string `json:"delivery_id"`
	N          int    `json:"n"` // 1, 2, ... within the delivery
	// Phase is the phase it made ready, Attempt that phase's attempt.
	Phase    Phase       `json:"phase"`
	Attempt  int64       `json:"attempt"`
	Status   SetupStatus `json:"status"`
	Commands []string    `json:"commands"`
	// Ran counts the commands that ran; on a failure the last is the
	// one that failed, with ExitCode (-1 when it ran out of time).
	Ran      int `json:"ran"`
	ExitCode int `json:"exit_code"`
	// Output is the end of what the commands printed, at most
	// MaxSetupOutput bytes; Log is the file holding all of it.
	Output string `json:"output,omitempty"`
	Log    string `json:"log,omitempty"`
	// Note says in one line what happened, for people to read.
	Note      string    `json:"note,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// MaxSetupOutput bounds the output a SetupRun keeps: the end of it.
const MaxSetupOutput = 8 << 10

// Duration is how long the set-up took.
func (r SetupRun) Duration() time.Duration { return r.EndedAt.Sub(r.StartedAt) }

// ReviewNote is a review verdict kept by baton itself: on the local forge
// it is where review feedback lives (GitHub keeps it as a PR review).
type ReviewNote struct {
	ID         int64     `json:"id"`
	DeliveryID string    `json:"delivery_id"`
	Verdict    Verdict   `json:"verdict"`
	Summary    string    `json:"summary"`
	Feedback   string    `json:"feedback"`
	Author     string    `json:"author"`
	URL        string    `json:"url"`
	CreatedAt  time.Time `json:"created_at"`
}

// DeliveryFilter selects deliveries. Zero fields match everything.
type DeliveryFilter struct {
	Phase     Phase
	RunStatus RunStatus
	// Open keeps deliveries that are not closed; Closed keeps closed ones.
	Open, Closed bool
	// Waiting keeps the deliveries that wait for a person
	// (Delivery.WaitsForPerson), listed the longest waiting first.
	Waiting bool
	// Offset skips that many of the deliveries Waiting lists (its pages
	// go by number: their order is not by seq).
	Offset int
	// Search keeps deliveries whose id, summary or repository contains it,
	// ignoring case.
	Search string
	// BeforeSeq keeps deliveries numbered below it: the page after one
	// that ended at BeforeSeq.
	BeforeSeq int64
	// AfterSeq keeps deliveries numbered above it, the Limit lowest of
	// them (still listed newest first): the page before one that began
	// at AfterSeq.
	AfterSeq int64
	Limit    int
}

// String renders a delivery's state for messages: "implement/running".
func (d *Delivery) String() string { return fmt.Sprintf("%s/%s", d.Phase, d.RunStatus) }
