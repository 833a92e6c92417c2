package delivery

import (
	"bytes"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/safefile"
)

// The view: a delivery as every edge shows it. `baton delivery show` and
// `list --json`, the HTTP API and the MCP tools all return these shapes,
// so a script, a dashboard and an agent read the same fields. They are
// not the domain types: durations are seconds (never Go nanoseconds or
// duration strings), times are RFC 3339, and what a person can do next
// (actions, waiting_for_person) is computed here once. The HTTP API's
// OpenAPI document (internal/web/openapi.json) describes every field.

// RefView is a ref as the view shows it.
type RefView struct {
	Role  baton.RefRole `json:"role"`
	Type  string        `json:"type"`
	Label string        `json:"label"`
	URL   string        `json:"url,omitempty"`
	// NoteID numbers the review note a review ref kept on this server
	// points at (GET /deliveries/{id}/notes/{note_id} shows it); its URL
	// is a file on the server, which no browser opens.
	NoteID int64 `json:"note_id,omitempty"`
}

// ConfigView is how a delivery runs, durations in seconds.
type ConfigView struct {
	Agent               string             `json:"agent"`
	Model               string             `json:"model,omitempty"`
	PhaseTimeoutSeconds float64            `json:"phase_timeout_seconds"`
	PhaseTimeouts       map[string]float64 `json:"phase_timeouts_seconds,omitempty"`
	MaxRounds           int                `json:"max_rounds"`
	BaseBranch          string             `json:"base_branch,omitempty"`
	VerifyCommand       string             `json:"verify_command,omitempty"`
	DeployCommand       string             `json:"deploy_command,omitempty"`
	ObserveCommand      string             `json:"observe_command,omitempty"`
	MergeMethod         string             `json:"merge_method,omitempty"`
}

// View is a delivery: its state, what a person can do with it now
// (Actions, Waiting) and how it runs.
type View struct {
	ID         string `json:"id"`
	Seq        int64  `json:"seq"`
	Title      string `json:"title"`
	Summary    string `json:"summary"`
	Repository string `json:"repository"`
	Forge      string `json:"forge"`
	Phase      string `json:"phase"`
	RunStatus  string `json:"run_status"`
	Queued     bool   `json:"queued"`
	// State names the state a decision on this view is made on
	// (Decision.On): phase/status/attempt.
	State   string `json:"state"`
	Waiting bool   `json:"waiting_for_person"`
	// Canceled: the failed phase was stopped by a person, not by its own
	// failure.
	Canceled    bool       `json:"canceled,omitempty"`
	Endpoint    string     `json:"endpoint"`
	Checkpoints []string   `json:"checkpoints"`
	Refs        []RefView  `json:"refs"`
	Error       string     `json:"error,omitempty"`
	Attempt     int64      `json:"attempt"`
	Rounds      int        `json:"rounds"`
	Owner       string     `json:"owner,omitempty"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	Actions     []string   `json:"actions"`
	Config      ConfigView `json:"config"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Listens reports whether a person's message (Service.Say) would reach
// an agent of the delivery v shows.
func (v View) Listens() bool {
	return Listens(&baton.Delivery{Phase: baton.Phase(v.Phase), RunStatus: baton.RunStatus(v.RunStatus), Queued: v.Queued})
}

// NewView is the view of d.
func NewView(d *baton.Delivery) View {
	v := View{
		ID: d.ID, Seq: d.Seq, Title: d.Title(), Summary: d.Summary, Repository: d.Repository, Forge: string(d.Forge),
		Phase: string(d.Phase), RunStatus: string(d.RunStatus), Queued: d.Queued, Canceled: d.Canceled, State: StateOf(d, "").String(), Waiting: d.WaitsForPerson(),
		Endpoint: string(d.Endpoint), Checkpoints: []string{}, Refs: []RefView{}, Error: d.Error, Attempt: d.Attempt,
		Rounds: d.Rounds, Owner: d.Owner, Actions: []string{}, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
	if !d.HeartbeatAt.IsZero() && d.RunStatus == baton.StatusRunning {
		hb := d.HeartbeatAt
		v.HeartbeatAt = &hb
	}
	for _, p := range d.Checkpoints {
		v.Checkpoints = append(v.Checkpoints, string(p))
	}
	for _, r := range d.Refs {
		v.Refs = append(v.Refs, RefView{Role: r.Role, Type: r.Type, Label: r.Label, URL: r.URL, NoteID: noteID(d.ID, r)})
	}
	for _, a := range Allowed(*d) {
		v.Actions = append(v.Actions, string(a))
	}
	c := d.Config
	v.Config = ConfigView{Agent: c.Agent, Model: c.Model, PhaseTimeoutSeconds: c.Timeout("").Seconds(), MaxRounds: c.MaxRounds,
		BaseBranch: c.BaseBranch, VerifyCommand: c.VerifyCommand, DeployCommand: c.DeployCommand, ObserveCommand: c.ObserveCommand,
		MergeMethod: string(c.MergeMethod)}
	for p, t := range c.PhaseTimeouts {
		if v.Config.PhaseTimeouts == nil {
			v.Config.PhaseTimeouts = map[string]float64{}
		}
		v.Config.PhaseTimeouts[string(p)] = t.Seconds()
	}
	return v
}

// Lists clip long text: a page of 200 deliveries must stay small
// whatever their summaries hold. A delivery's own view has it whole.
const (
	listTitle = 200     // bytes of a title or a ref's label in a list
	listText  = 1 << 10 // bytes of a summary or an error in a list
)

// NewListItem is d's view as a list shows it: its text clipped (a
// summary's first line is also its request ref's label).
func NewListItem(d *baton.Delivery) View {
	v := NewView(d)
	v.Title = baton.Truncate(v.Title, listTitle, "…")
	v.Summary = baton.Truncate(v.Summary, listText, "…")
	v.Error = baton.Truncate(v.Error, listText, "…")
	for i := range v.Refs {
		v.Refs[i].Label = baton.Truncate(v.Refs[i].Label, listTitle, "…")
	}
	return v
}

// NewListItems are the list views of ds, [] for none.
func NewListItems(ds []*baton.Delivery) []View {
	out := make([]View, 0, len(ds))
	for _, d := range ds {
		out = append(out, NewListItem(d))
	}
	return out
}

// PhaseLogView is one phase log entry; an entry still current has no
// ended_at and lasts until now.
type PhaseLogView struct {
	ID              int64      `json:"id"`
	Phase           string     `json:"phase"`
	Status          string     `json:"status"`
	Executor        string     `json:"executor"`
	Verdict         string     `json:"verdict,omitempty"`
	Actor           string     `json:"actor"`
	Action          string     `json:"action"`
	Note            string     `json:"note,omitempty"`
	Decision        string     `json:"decision,omitempty"`
	Reason          string     `json:"reason,omitempty"`
	Waits           bool       `json:"waits_for_person,omitempty"`
	Attempt         int64      `json:"attempt"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	DurationSeconds float64    `json:"duration_seconds"`
}

// NewPhaseLogView is the view of e at now.
func NewPhaseLogView(e baton.PhaseLogEntry, now time.Time) PhaseLogView {
	v := PhaseLogView{ID: e.ID, Phase: string(e.Phase), Status: string(e.Status), Executor: string(e.Executor),
		Verdict: string(e.Verdict), Actor: e.Actor, Action: e.Action, Note: e.Note, Decision: e.Decision, Reason: e.Reason, Waits: e.Waits, Attempt: e.Attempt,
		StartedAt: e.StartedAt, DurationSeconds: e.Duration(now).Seconds()}
	if !e.EndedAt.IsZero() {
		end := e.EndedAt
		v.EndedAt = &end
	}
	return v
}

// RunView is an agent run without its long texts: Summary is the start
// of its final message, Logs the names of the raw logs on this machine.
type RunView struct {
	N               int        `json:"n"`
	Phase           string     `json:"phase"`
	Attempt         int64      `json:"attempt"`
	Agent           string     `json:"agent"`
	Status          string     `json:"status"`
	Model           string     `json:"model,omitempty"`
	CostUSD         float64    `json:"cost_usd"`
	InputTokens     int64      `json:"input_tokens"`
	OutputTokens    int64      `json:"output_tokens"`
	DurationSeconds float64    `json:"duration_seconds"`
	ExitCode        int        `json:"exit_code"`
	Error           string     `json:"error,omitempty"`
	Summary         string     `json:"summary,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	Logs            []string   `json:"logs"`
	// StderrTail is the end of what the agent wrote to stderr (its
	// diagnostics), when its log is on this machine.
	StderrTail string `json:"stderr_tail,omitempty"`
}

// NewRunView is the view of r at now: a run still going lasts until now.
func NewRunView(r baton.AgentRun, now time.Time) RunView {
	v := RunView{N: r.N, Phase: string(r.Phase), Attempt: r.Attempt, Agent: r.Agent, Status: string(r.Status), Model: r.Model,
		CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, DurationSeconds: r.Duration.Seconds(),
		ExitCode: r.ExitCode, Error: r.Error, Summary: baton.Truncate(strings.TrimSpace(r.FinalMessage), 200, "…"),
		StartedAt: r.StartedAt, Logs: []string{}}
	if !r.EndedAt.IsZero() {
		e := r.EndedAt
		v.EndedAt = &e
	} else if r.Status == baton.RunRunning {
		v.DurationSeconds = now.Sub(r.StartedAt).Seconds()
	}
	for _, f := range LogFiles(r) {
		v.Logs = append(v.Logs, f.Name)
		if f.Name == StderrLog && f.Size > 0 {
			v.StderrTail = logTail(f.Path, f.Size, maxStderrTail)
		}
	}
	return v
}

// maxStderrTail bounds the stderr a run's view carries.
const maxStderrTail = 2 << 10

// logTail is the last n bytes of the log at path (of size), from a line
// start, "" when it cannot be read.
func logTail(path string, size, n int64) string {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	off := max(size-n, 0)
	b := make([]byte, size-off)
	k, _ := f.ReadAt(b, off)
	b = b[:k]
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "�"))
}

// RunDetailView is one agent run with what it was told and said.
type RunDetailView struct {
	RunView
	Prompt       string `json:"prompt"`
	SystemPrompt string `json:"system_prompt"`
	FinalMessage string `json:"final_message"`
	SessionID    string `json:"session_id,omitempty"`
}

// NewRunDetailView is the full view of r at now.
func NewRunDetailView(r baton.AgentRun, now time.Time) RunDetailView {
	return RunDetailView{RunView: NewRunView(r, now), Prompt: r.Prompt, SystemPrompt: r.SystemPrompt,
		FinalMessage: r.FinalMessage, SessionID: r.SessionID}
}

// DetailView is a delivery with its history: what `delivery show`, GET
// /api/deliveries/{id} and the MCP delivery tool return.
type DetailView struct {
	Delivery View           `json:"delivery"`
	PhaseLog []PhaseLogView `json:"phase_log"`
	// Timeline folds the phase log into one step per attempt at a phase,
	// with each set-up a step of its own before the phase it made ready.
	Timeline  []StepView `json:"timeline"`
	AgentRuns []RunView  `json:"agent_runs"`
	// CostUSD sums the agent runs.
	CostUSD float64 `json:"cost_usd"`
	// LastEvent is the number of the newest event: a stream resumed after
	// it sees only what happens next.
	LastEvent int64 `json:"last_event"`
}

// View is det's view at now.
func (det *Detail) View(now time.Time) DetailView {
	v := DetailView{Delivery: NewView(det.Delivery), PhaseLog: []PhaseLogView{}, AgentRuns: []RunView{}, LastEvent: det.LastEvent}
	for _, e := range det.PhaseLog {
		v.PhaseLog = append(v.PhaseLog, NewPhaseLogView(e, now))
	}
	v.Timeline = WithSetups(Timeline(det.PhaseLog, now), det.SetupRuns)
	for _, r := range det.AgentRuns {
		v.AgentRuns = append(v.AgentRuns, NewRunView(r, now))
		v.CostUSD += r.CostUSD
	}
	return v
}

// AgentLine is how a delivery runs its agent, as a person reads it: the
// agent, its model and its arguments, quoted as a shell would take them
// ("claude, model opus --max-turns 5").
func AgentLine(c baton.DeliveryConfig) string {
	line := c.Agent
	if c.Model != "" {
		line += ", model " + c.Model
	}
	if len(c.AgentArgs) > 0 {
		line += " " + agentrun.QuoteArgs(c.AgentArgs)
	}
	return line
}

// CheckAgent says whether agent (claude, codex, droid, pi or command:<argv>)
// can run on this machine: Invalid for a name no agent has, NotFound when
// its executable is not installed here, on the PATH of env (added to
// baton's own environment, as Service.AgentEnv is).
func CheckAgent(agent string, env []string) error {
	return agentrun.Check(agentrun.Spec{Agent: agent, Prompt: "-", Env: env})
}
