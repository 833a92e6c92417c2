package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
)

// The API's JSON shapes are the delivery view (delivery.View and the
// rest of internal/delivery/view.go), the one every edge returns; the
// shapes here are the API's own envelopes. The OpenAPI document
// (openapi.json) describes every field.

func (s *Server) detail(r *http.Request, ref string) (*delivery.DetailView, error) {
	det, err := s.Deliveries.Get(r.Context(), ref)
	if err != nil {
		return nil, err
	}
	v := det.View(s.now())
	return &v, nil
}

// listJSON is a page of deliveries; NextCursor fetches the next page.
type listJSON struct {
	Deliveries []delivery.View `json:"deliveries"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

const (
	defaultPage = 50
	maxPage     = 200
)

// listFilter reads a list's query: phase, status, state (active, closed
// or all), q (search), cursor and limit.
func listFilter(r *http.Request) (baton.DeliveryFilter, error) {
	q := r.URL.Query()
	f, err := queryFilter(q)
	if err != nil {
		return f, err
	}
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
		if f.Waiting {
			// The waiting are listed longest waiting first, not by
			// number: their cursor counts what came before.
			f.BeforeSeq, f.Offset = 0, int(min(n, 1<<30))
		}
	}
	return f, nil
}

// queryFilter reads what both lists (the API's and the dashboard's)
// filter by: phase, status, state and q.
func queryFilter(q url.Values) (baton.DeliveryFilter, error) {
	f, err := delivery.ParseFilter(q.Get("phase"), q.Get("status"), q.Get("state"))
	if err != nil {
		return f, err
	}
	f.Search = baton.Truncate(strings.TrimSpace(q.Get("q")), 200, "")
	return f, nil
}

func (s *Server) list(r *http.Request, f baton.DeliveryFilter) (listJSON, error) {
	if f.AfterSeq > 0 {
		// The page newer than AfterSeq: older ones follow it, from
		// AfterSeq itself on.
		ds, err := s.Deliveries.List(r.Context(), f)
		if err != nil {
			return listJSON{}, err
		}
		out := listJSON{Deliveries: delivery.NewListItems(ds)}
		if len(ds) > 0 {
			out.NextCursor = strconv.FormatInt(ds[len(ds)-1].Seq, 10)
		}
		return out, nil
	}
	limit := f.Limit
	f.Limit = limit + 1 // one more says whether there is a next page
	ds, err := s.Deliveries.List(r.Context(), f)
	if err != nil {
		return listJSON{}, err
	}
	var out listJSON
	if len(ds) > limit {
		ds = ds[:limit]
		out.NextCursor = strconv.FormatInt(ds[len(ds)-1].Seq, 10)
		if f.Waiting {
			out.NextCursor = strconv.Itoa(f.Offset + limit)
		}
	}
	out.Deliveries = delivery.NewListItems(ds)
	return out, nil
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
	if a := s.Agent; a.Missing() {
		// Its plan would fail within seconds, saying less than this.
		return delivery.Request{}, baton.Errorf(baton.Unavailable, "this server's agent, %s, is not installed, so a delivery would fail at its first phase: %s", a.Name, a.Fix)
	}
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
	Created  bool          `json:"created"`
	Delivery delivery.View `json:"delivery"`
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
	writeJSON(w, status, createdJSON{Created: created, Delivery: delivery.NewView(d)})
	return nil
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) error {
	v, err := s.detail(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// ActionRequest is the optional body of an action: the reason for a
// reject (required) or a close, a reject's notes on lines of the change
// or the plan, for a retry the agent to switch to, and the state the
// decision is made on (a delivery view's "state"; the If-Match header
// may carry it instead).
type ActionRequest struct {
	Reason string           `json:"reason,omitempty"`
	Notes  []baton.LineNote `json:"notes,omitempty"`
	Agent  string           `json:"agent,omitempty"`
	State  string           `json:"state,omitempty"`
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

// MessageRequest is the body of POST /api/deliveries/{id}/messages.
type MessageRequest struct {
	Text string `json:"text"`
}

// DecodeMessage reads a message request: one JSON object, no unknown
// fields.
func DecodeMessage(b []byte) (MessageRequest, error) {
	var m MessageRequest
	err := decodeStrict(b, &m)
	return m, err
}

func (s *Server) sayToDelivery(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	body, err := DecodeMessage(b)
	if err != nil {
		return err
	}
	m, err := s.Deliveries.Say(r.Context(), r.PathValue("id"), actor(r), body.Text)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, m)
	return nil
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
	state := body.State
	if m := r.Header.Get("If-Match"); m != "" {
		if state != "" && state != m {
			return baton.Errorf(baton.Invalid, "the If-Match header and the body's state name two states: send one")
		}
		state = m
	}
	d, err := s.decide(r, a, body, state)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, delivery.NewView(d))
	return nil
}

// decide applies a person's action (its reason, notes and agent from
// req) to the delivery the path names, made on the state named state
// ("" for whatever it is now): run starts a waiting phase for the
// workers; a retry may switch the agent to one of s.Agents.
func (s *Server) decide(r *http.Request, a delivery.Action, req ActionRequest, state string) (*baton.Delivery, error) {
	on, err := delivery.ParseState(state)
	if err != nil {
		return nil, err
	}
	dec := delivery.Decision{Action: a, Actor: actor(r), Note: req.Reason, Notes: req.Notes, On: on}
	if agent := req.Agent; agent != "" {
		if a != delivery.ActRetry {
			return nil, baton.Errorf(baton.Invalid, "only a retry can switch the agent")
		}
		if !slices.Contains(s.Agents, agent) {
			return nil, baton.Errorf(baton.Invalid, "agent %q: a retry can switch to %s", baton.Truncate(agent, 40, "…"), strings.Join(s.Agents, ", "))
		}
		dec.Change = delivery.Settings{Agent: &agent}
	}
	return s.Deliveries.DecideOn(r.Context(), r.PathValue("id"), dec)
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
	writeJSON(w, http.StatusOK, delivery.NewRunDetailView(run, s.now()))
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
	f, err := delivery.OpenLog(run, name)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if name == delivery.EventsLog {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	_, _ = io.Copy(w, f)
	return nil
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
	v := settingsJSON{Version: s.Version, Agent: s.Agent, Database: s.Deliveries.Database(),
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
	svc := s.Deliveries
	m.Collected("baton_deliveries", "Deliveries by phase and run status.", typeGauge, []string{"phase", "status"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			counts, err := svc.CountByState(ctx)
			for k, n := range counts {
				emit(float64(n), string(k.Phase), string(k.Status))
			}
			return err
		})
	sums := func(ctx context.Context, each func(a delivery.AgentTotals)) error {
		ts, err := svc.AgentTotals(ctx)
		for _, t := range ts {
			each(t)
		}
		return err
	}
	m.Collected("baton_agent_runs_total", "Agent runs started, by agent.", typeCounter, []string{"agent"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			return sums(ctx, func(t delivery.AgentTotals) { emit(float64(t.Runs), t.Agent) })
		})
	m.Collected("baton_agent_cost_usd_total", "Agent cost in US dollars as the agents report it, by agent.", typeCounter, []string{"agent"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			return sums(ctx, func(t delivery.AgentTotals) { emit(t.CostUSD, t.Agent) })
		})
	m.Collected("baton_agent_tokens_total", "Agent tokens by agent and direction (input, output).", typeCounter, []string{"agent", "direction"},
		func(ctx context.Context, emit func(float64, ...string)) error {
			return sums(ctx, func(t delivery.AgentTotals) {
				emit(float64(t.InputTokens), t.Agent, "input")
				emit(float64(t.OutputTokens), t.Agent, "output")
			})
		})
}
