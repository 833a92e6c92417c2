package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/safefile"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// The API's JSON shapes. They are the API's own, not the domain types:
// durations are seconds, never Go nanoseconds, and every field is
// described in the OpenAPI document (openapi.json).

type refJSON struct {
	Role  baton.RefRole `json:"role"`
	Type  string        `json:"type"`
	Label string        `json:"label"`
	URL   string        `json:"url,omitempty"`
}

type configJSON struct {
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

type deliveryJSON struct {
	ID          string     `json:"id"`
	Seq         int64      `json:"seq"`
	Title       string     `json:"title"`
	Summary     string     `json:"summary"`
	Repository  string     `json:"repository"`
	Forge       string     `json:"forge"`
	Phase       string     `json:"phase"`
	RunStatus   string     `json:"run_status"`
	Queued      bool       `json:"queued"`
	Waiting     bool       `json:"waiting_for_person"`
	Endpoint    string     `json:"endpoint"`
	Checkpoints []string   `json:"checkpoints"`
	Refs        []refJSON  `json:"refs"`
	Error       string     `json:"error,omitempty"`
	Attempt     int64      `json:"attempt"`
	Rounds      int        `json:"rounds"`
	Owner       string     `json:"owner,omitempty"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	Actions     []string   `json:"actions"`
	Config      configJSON `json:"config"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

func toDelivery(d *baton.Delivery) deliveryJSON {
	v := deliveryJSON{
		ID: d.ID, Seq: d.Seq, Title: title(d.Summary), Summary: d.Summary, Repository: d.Repository, Forge: string(d.Forge),
		Phase: string(d.Phase), RunStatus: string(d.RunStatus), Queued: d.Queued, Waiting: waiting(d),
		Endpoint: string(d.Endpoint), Checkpoints: []string{}, Refs: []refJSON{}, Error: d.Error, Attempt: d.Attempt,
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
		v.Refs = append(v.Refs, refJSON{r.Role, r.Type, r.Label, r.URL})
	}
	for _, a := range delivery.Allowed(*d) {
		v.Actions = append(v.Actions, string(a))
	}
	c := d.Config
	v.Config = configJSON{Agent: c.Agent, Model: c.Model, PhaseTimeoutSeconds: c.Timeout("").Seconds(), MaxRounds: c.MaxRounds,
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

// waiting reports whether the delivery waits for a person.
func waiting(d *baton.Delivery) bool {
	switch d.RunStatus {
	case baton.StatusPending:
		return !d.Queued && d.Phase.Runnable()
	case baton.StatusSucceeded:
		return d.Phase != baton.PhaseClose
	case baton.StatusFailed, baton.StatusBlocked:
		return d.Phase != baton.PhaseClose
	}
	return false
}

func title(summary string) string {
	t, _, _ := strings.Cut(strings.TrimSpace(summary), "\n")
	return t
}

type phaseLogJSON struct {
	ID              int64      `json:"id"`
	Phase           string     `json:"phase"`
	Status          string     `json:"status"`
	Executor        string     `json:"executor"`
	Verdict         string     `json:"verdict,omitempty"`
	Actor           string     `json:"actor"`
	Action          string     `json:"action"`
	Note            string     `json:"note,omitempty"`
	Attempt         int64      `json:"attempt"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	DurationSeconds float64    `json:"duration_seconds"`
}

type runJSON struct {
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
}

type runDetailJSON struct {
	runJSON
	Prompt       string `json:"prompt"`
	SystemPrompt string `json:"system_prompt"`
	FinalMessage string `json:"final_message"`
	SessionID    string `json:"session_id,omitempty"`
}

func toRun(r baton.AgentRun, now time.Time) runJSON {
	v := runJSON{N: r.N, Phase: string(r.Phase), Attempt: r.Attempt, Agent: r.Agent, Status: string(r.Status), Model: r.Model,
		CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, DurationSeconds: r.Duration.Seconds(),
		ExitCode: r.ExitCode, Error: r.Error, Summary: baton.Truncate(strings.TrimSpace(r.FinalMessage), 200, "…"),
		StartedAt: r.StartedAt, Logs: []string{}}
	if !r.EndedAt.IsZero() {
		e := r.EndedAt
		v.EndedAt = &e
	} else if r.Status == baton.RunRunning {
		v.DurationSeconds = now.Sub(r.StartedAt).Seconds()
	}
	for _, f := range delivery.LogFiles(r) {
		v.Logs = append(v.Logs, f.Name)
	}
	return v
}

type detailJSON struct {
	Delivery  deliveryJSON   `json:"delivery"`
	PhaseLog  []phaseLogJSON `json:"phase_log"`
	AgentRuns []runJSON      `json:"agent_runs"`
	// CostUSD sums the agent runs.
	CostUSD float64 `json:"cost_usd"`
	// LastEvent is the number of the newest event: a stream resumed after
	// it sees only what happens next.
	LastEvent int64 `json:"last_event"`
}

func (s *Server) detail(r *http.Request, ref string) (*detailJSON, *delivery.Detail, error) {
	det, err := s.Deliveries.Get(r.Context(), ref)
	if err != nil {
		return nil, nil, err
	}
	last, err := s.Deliveries.Store().LastEvent(r.Context(), det.Delivery.ID)
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	v := &detailJSON{Delivery: toDelivery(det.Delivery), PhaseLog: []phaseLogJSON{}, AgentRuns: []runJSON{}, LastEvent: last}
	for _, e := range det.PhaseLog {
		pl := phaseLogJSON{ID: e.ID, Phase: string(e.Phase), Status: string(e.Status), Executor: string(e.Executor),
			Verdict: string(e.Verdict), Actor: e.Actor, Action: e.Action, Note: e.Note, Attempt: e.Attempt,
			StartedAt: e.StartedAt, DurationSeconds: e.Duration(now).Seconds()}
		if !e.EndedAt.IsZero() {
			end := e.EndedAt
			pl.EndedAt = &end
		}
		v.PhaseLog = append(v.PhaseLog, pl)
	}
	for _, run := range det.AgentRuns {
		v.AgentRuns = append(v.AgentRuns, toRun(run, now))
		v.CostUSD += run.CostUSD
	}
	return v, det, nil
}

// listJSON is a page of deliveries; NextCursor fetches the next page.
type listJSON struct {
	Deliveries []deliveryJSON `json:"deliveries"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

const (
	defaultPage = 50
	maxPage     = 200
)

// listFilter reads a list's query: phase, status, state (active, closed
// or all), q (search), cursor and limit.
func listFilter(r *http.Request) (baton.DeliveryFilter, error) {
	q := r.URL.Query()
	f, err := delivery.ParseFilter(q.Get("phase"), q.Get("status"))
	if err != nil {
		return f, err
	}
	switch q.Get("state") {
	case "", "all":
	case "active":
		f.Open = true
	case "closed":
		f.Closed = true
	default:
		return f, baton.Errorf(baton.Invalid, "bad state %q: want active, closed or all", baton.Truncate(q.Get("state"), 20, "…"))
	}
	f.Search = baton.Truncate(strings.TrimSpace(q.Get("q")), 200, "")
	f.Limit = defaultPage
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPage {
			return f, baton.Errorf(baton.Invalid, "bad limit %q: want 1 to %d", baton.Truncate(l, 20, "…"), maxPage)
		}
		f.Limit = n
	}
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 1 {
			return f, baton.Errorf(baton.Invalid, "bad cursor %q: pass next_cursor from the previous page", baton.Truncate(c, 20, "…"))
		}
		f.BeforeSeq = n
	}
	return f, nil
}

func (s *Server) list(r *http.Request, f baton.DeliveryFilter) (listJSON, error) {
	limit := f.Limit
	f.Limit = limit + 1 // one more says whether there is a next page
	ds, err := s.Deliveries.List(r.Context(), f)
	if err != nil {
		return listJSON{}, err
	}
	out := listJSON{Deliveries: []deliveryJSON{}}
	if len(ds) > limit {
		ds = ds[:limit]
		out.NextCursor = strconv.FormatInt(ds[len(ds)-1].Seq, 10)
	}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, listItem(d))
	}
	return out, nil
}

// Lists clip long text: a page of 200 deliveries must stay small
// whatever their summaries hold. GET /api/deliveries/{id} has it whole.
const (
	listTitle = 200     // bytes of a title in a list
	listText  = 1 << 10 // bytes of a summary or an error in a list
)

// listItem is a delivery as a list shows it: its text clipped (a
// summary's first line is also its request ref's label).
func listItem(d *baton.Delivery) deliveryJSON {
	v := toDelivery(d)
	v.Title = baton.Truncate(v.Title, listTitle, "…")
	v.Summary = baton.Truncate(v.Summary, listText, "…")
	v.Error = baton.Truncate(v.Error, listText, "…")
	for i := range v.Refs {
		v.Refs[i].Label = baton.Truncate(v.Refs[i].Label, listTitle, "…")
	}
	return v
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	out, err := s.list(r, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// CreateRequest is the body of POST /api/deliveries: an issue, or a
// local repository the server allows with a summary. Nothing in it can
// choose an agent or a command: those come from the server's
// configuration.
type CreateRequest struct {
	IssueURL string `json:"issue_url,omitempty"`
	Repo     string `json:"repo,omitempty"`
	Summary  string `json:"summary,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// Checkpoints, when present, replace the defaults: [] means none.
	Checkpoints []string `json:"checkpoints,omitzero"`
}

// forbiddenFields name request fields that would choose what runs.
var forbiddenFields = []string{"agent", "agent_args", "model", "verify", "deploy", "observe", "command", "verify_command", "deploy_command", "observe_command", "timeout"}

// DecodeCreate parses a create request strictly: one JSON object, known
// fields only, and a clear refusal of fields that would choose an agent
// or a command.
func DecodeCreate(b []byte) (CreateRequest, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		msg := "null"
		if err != nil {
			msg = baton.Truncate(err.Error(), 200, "…")
		}
		return CreateRequest{}, baton.Errorf(baton.Invalid, "the body must be a JSON object: %s", msg)
	}
	for _, f := range forbiddenFields {
		if _, ok := raw[f]; ok {
			return CreateRequest{}, baton.Errorf(baton.Invalid, "%q cannot be set by a request: agents and commands come from the server's configuration (--agent, sources) and the repository's .agent/delivery.json", f)
		}
	}
	var c CreateRequest
	if err := decodeStrict(b, &c); err != nil {
		return CreateRequest{}, err
	}
	return c, nil
}

// decodeStrict decodes one JSON value with no unknown fields.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return baton.Errorf(baton.Invalid, "bad request body: %s", baton.Truncate(err.Error(), 200, "…"))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return baton.Errorf(baton.Invalid, "bad request body: more than one JSON value")
	}
	return nil
}

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	return io.ReadAll(r.Body)
}

// request turns a create request into the service's Request.
func (s *Server) request(c CreateRequest, actor string) (delivery.Request, error) {
	req := delivery.Request{IssueURL: strings.TrimSpace(c.IssueURL), Summary: c.Summary, Actor: actor}
	if c.Repo != "" {
		repo, err := delivery.AllowedRepo(s.Repos, c.Repo)
		if err != nil {
			return req, err
		}
		req.Repo = repo
	}
	if c.Endpoint != "" {
		p, err := baton.ParsePhase(c.Endpoint)
		if err != nil {
			return req, err
		}
		req.Settings.Endpoint = &p
	}
	if c.Checkpoints != nil {
		cps, err := baton.ParseCheckpoints(strings.Join(c.Checkpoints, ","))
		if err != nil {
			return req, err
		}
		req.Settings.Checkpoints = &cps
	}
	return req, nil
}

type createdJSON struct {
	Created  bool         `json:"created"`
	Delivery deliveryJSON `json:"delivery"`
}

func (s *Server) createDelivery(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	c, err := DecodeCreate(b)
	if err != nil {
		return err
	}
	req, err := s.request(c, actor(r))
	if err != nil {
		return err
	}
	d, created, err := s.Deliveries.Create(r.Context(), req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/deliveries/"+d.ID)
	}
	writeJSON(w, status, createdJSON{Created: created, Delivery: toDelivery(d)})
	return nil
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) error {
	v, _, err := s.detail(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// ActionRequest is the optional body of an action: the reason for a
// reject (required) or a close.
type ActionRequest struct {
	Reason string `json:"reason,omitempty"`
}

// DecodeAction parses an action body; an empty body is no reason.
func DecodeAction(b []byte) (ActionRequest, error) {
	var a ActionRequest
	if len(bytes.TrimSpace(b)) == 0 {
		return a, nil
	}
	err := decodeStrict(b, &a)
	return a, err
}

// personActions are the actions the API and the dashboard offer.
var personActions = []delivery.Action{delivery.ActApprove, delivery.ActReject, delivery.ActRetry, delivery.ActCancel, delivery.ActClose, delivery.ActRun}

func parseAction(s string) (delivery.Action, error) {
	a := delivery.Action(s)
	if !slices.Contains(personActions, a) {
		return "", baton.Errorf(baton.NotFound, "no action %q: want approve, reject, retry, cancel, close or run", baton.Truncate(s, 40, "…"))
	}
	return a, nil
}

func (s *Server) actOnDelivery(w http.ResponseWriter, r *http.Request) error {
	a, err := parseAction(r.PathValue("action"))
	if err != nil {
		return err
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	body, err := DecodeAction(b)
	if err != nil {
		return err
	}
	d, err := s.decide(r, a, body.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toDelivery(d))
	return nil
}

// decide applies a person's action to the delivery the path names: run
// starts a waiting phase for the workers; the rest are decisions.
func (s *Server) decide(r *http.Request, a delivery.Action, reason string) (*baton.Delivery, error) {
	if a == delivery.ActRun {
		return s.Deliveries.Start(r.Context(), r.PathValue("id"), actor(r))
	}
	return s.Deliveries.Decide(r.Context(), r.PathValue("id"), a, actor(r), reason)
}

func (s *Server) run(r *http.Request) (baton.AgentRun, error) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		return baton.AgentRun{}, baton.Errorf(baton.NotFound, "no agent run %q: runs are numbered from 1", baton.Truncate(r.PathValue("n"), 20, "…"))
	}
	return s.Deliveries.AgentRun(r.Context(), r.PathValue("id"), n)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.run(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runDetailJSON{runJSON: toRun(run, s.now()), Prompt: run.Prompt, SystemPrompt: run.SystemPrompt,
		FinalMessage: run.FinalMessage, SessionID: run.SessionID})
	return nil
}

// getRunLog streams one raw log of an agent run, when it is on this
// machine (a worker elsewhere keeps its logs in its own data directory).
func (s *Server) getRunLog(w http.ResponseWriter, r *http.Request) error {
	run, err := s.run(r)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if name != agentrun.EventsLog && name != agentrun.StdoutLog && name != agentrun.StderrLog {
		return baton.Errorf(baton.NotFound, "no log %q: want %s, %s or %s", baton.Truncate(name, 40, "…"), agentrun.EventsLog, agentrun.StdoutLog, agentrun.StderrLog)
	}
	for _, lf := range delivery.LogFiles(run) {
		if lf.Name != name {
			continue
		}
		f, err := safefile.OpenRegular(lf.Path)
		if err != nil {
			break
		}
		defer f.Close()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if name == agentrun.EventsLog {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		_, _ = io.Copy(w, f)
		return nil
	}
	return baton.Errorf(baton.NotFound, "run %d has no %s on this machine (a worker elsewhere keeps its logs in its own data directory)", run.N, name)
}

// settingsJSON is what the server runs with.
type settingsJSON struct {
	Version  string         `json:"version"`
	Agent    AgentStatus    `json:"agent"`
	Database string         `json:"database"`
	DataDir  string         `json:"data_dir"`
	Repos    []string       `json:"repos"`
	Intake   *intakeSetJSON `json:"intake,omitempty"`
}

func (s *Server) settings(r *http.Request) (settingsJSON, error) {
	v := settingsJSON{Version: s.Version, Agent: s.Agent, Database: string(s.Deliveries.Store().Dialect()),
		DataDir: s.Deliveries.DataDir, Repos: append([]string{}, s.Repos...)}
	if s.Intake != nil {
		st, err := s.Intake.Settings(r.Context())
		if err != nil {
			return v, err
		}
		is := toIntakeSettings(st)
		v.Intake = &is
	}
	return v, nil
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) error {
	v, err := s.settings(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	return s.Metrics.Write(r.Context(), w)
}

// ObserveJob records one phase job of an in-process worker.
func (s *Server) ObserveJob(phase baton.Phase, result string, took time.Duration) {
	s.jobs.Observe(took.Seconds(), string(phase), result)
}

// registerMetrics adds the server's metrics to its registry.
func (s *Server) registerMetrics() {
	m := s.Metrics
	s.jobs = m.NewHistogram("baton_job_duration_seconds", "Phase jobs run by this server's workers: time from claim to result, by phase and result.",
		[]float64{.1, .5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}, "phase", "result")
	s.requests = m.NewHistogram("baton_http_request_duration_seconds", "HTTP request latency by route and status.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}, "route", "code")
	st := s.Deliveries.Store()
	m.Collected("baton_deliveries", "Deliveries by phase and run status.", typeGauge, []string{"phase", "status"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			counts, err := st.CountDeliveries(ctx)
			for k, n := range counts {
				emit(float64(n), k[0], k[1])
			}
			return err
		})
	sums := func(ctx context.Context, each func(a sqlstore.AgentTotals)) error {
		ts, err := st.SumAgentRuns(ctx)
		for _, t := range ts {
			each(t)
		}
		return err
	}
	m.Collected("baton_agent_runs_total", "Agent runs started, by agent.", typeCounter, []string{"agent"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			return sums(ctx, func(t sqlstore.AgentTotals) { emit(float64(t.Runs), t.Agent) })
		})
	m.Collected("baton_agent_cost_usd_total", "Agent cost in US dollars as the agents report it, by agent.", typeCounter, []string{"agent"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			return sums(ctx, func(t sqlstore.AgentTotals) { emit(t.CostUSD, t.Agent) })
		})
	m.Collected("baton_agent_tokens_total", "Agent tokens by agent and direction (input, output).", typeCounter, []string{"agent", "direction"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			return sums(ctx, func(t sqlstore.AgentTotals) {
				emit(float64(t.InputTokens), t.Agent, "input")
				emit(float64(t.OutputTokens), t.Agent, "output")
			})
		})
}
