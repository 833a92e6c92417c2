package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/goaltree"
)

const (
	deliveryURI   = "baton://deliveries/"
	runnerTreeURI = "baton://runner/tree"
)

// The delivery tools are served only when a database is configured
// (Options.Deliveries); the service is opened at the first call and kept.
var deliveryTools = []tool{
	{"deliveries", func(s *Server) {
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "deliveries", Annotations: readOnly,
			Description: "List deliveries (issue to merged change)."}, s.deliveries)
	}},
	{"delivery", func(s *Server) {
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "delivery", Annotations: readOnly,
			Description: "A delivery with its refs, phase log and agent runs."}, s.deliveryGet)
	}},
	{"delivery_create", func(s *Server) {
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "delivery_create", Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
			Description: "Create a delivery for a GitHub issue or local repository."}, s.deliveryCreate)
	}},
	{"delivery_approve", decisionTool(delivery.ActApprove, "Start a waiting checkpoint phase, or accept a phase's result.", false)},
	{"delivery_reject", func(s *Server) {
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "delivery_reject", Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
			Description: "Send a delivery back, with the reason."}, func(ctx context.Context, req *sdk.CallToolRequest, in rejectIn) (*sdk.CallToolResult, any, error) {
			notes, err := baton.ParseLineNotes(in.Notes)
			if err != nil {
				return nil, nil, err
			}
			return s.decide(ctx, in.Delivery, in.State, delivery.Decision{Action: delivery.ActReject, Note: in.Note, Notes: notes})
		})
	}},
	{"delivery_say", func(s *Server) {
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "delivery_say", Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
			Description: "Message the agent running a delivery's phase."}, s.deliverySay)
	}},
	{"delivery_retry", decisionTool(delivery.ActRetry, "Run a failed or blocked phase again.", false)},
	{"delivery_cancel", decisionTool(delivery.ActCancel, "Stop the running phase; its result is discarded.", true)},
}

// service opens the delivery service once.
func (s *Server) service(ctx context.Context) (*delivery.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil {
		return s.svc, nil
	}
	svc, err := s.opts.Deliveries(ctx)
	if err != nil {
		return nil, err
	}
	s.svc = svc
	return svc, nil
}

// Close releases the delivery database, if it was opened.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil {
		s.svc.Close()
		s.svc = nil
	}
}

// deliveryLine is one delivery in a sentence.
func deliveryLine(d *baton.Delivery) string {
	line := fmt.Sprintf("#%d %s: %s (%s) — %s %s", d.Seq, d.ID, baton.Truncate(d.Title(), 200, "…"), d.Repository, d.Phase, d.RunStatus)
	if d.Error != "" {
		line += ": " + baton.Truncate(d.Error, 1<<10, "…")
	}
	return line
}

// deliveriesIn takes the words every edge's list filter takes
// (delivery.ParseFilter); the descriptions list them, and a test holds
// them to the parser.
type deliveriesIn struct {
	Phase  string `json:"phase,omitempty" jsonschema:"intake, plan, implement, review, verify, deploy, observe or close"`
	Status string `json:"status,omitempty" jsonschema:"pending, running, succeeded, failed or blocked"`
	State  string `json:"state,omitempty" jsonschema:"active, waiting, closed or all (default all; waiting: for a person, the longest first)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 20"`
}

// deliveriesOut is the deliveries tool's result: the list views (text
// clipped, as the API's lists) and how many more matched.
type deliveriesOut struct {
	Deliveries []delivery.View `json:"deliveries"`
	More       int             `json:"more"`
}

func (s *Server) deliveries(ctx context.Context, _ *sdk.CallToolRequest, in deliveriesIn) (*sdk.CallToolResult, any, error) {
	f, err := delivery.ParseFilter(in.Phase, in.Status, in.State)
	if err != nil {
		return nil, nil, err
	}
	if in.Limit < 0 {
		return nil, nil, baton.Errorf(baton.Invalid, "limit must not be negative (got %d)", in.Limit)
	}
	svc, err := s.service(ctx)
	if err != nil {
		return nil, nil, err
	}
	ds, err := svc.List(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	more := 0
	if len(ds) > limit {
		ds, more = ds[:limit], len(ds)-limit
	}
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(deliveryLine(d) + "\n")
	}
	if len(ds) == 0 {
		b.WriteString("No deliveries. Create one with delivery_create.\n")
	}
	return text("%s", b.String()), deliveriesOut{Deliveries: delivery.NewListItems(ds), More: more}, nil
}

type deliveryRefIn struct {
	Delivery string `json:"delivery" jsonschema:"id or #seq"`
}

func (s *Server) deliveryGet(ctx context.Context, _ *sdk.CallToolRequest, in deliveryRefIn) (*sdk.CallToolResult, any, error) {
	svc, err := s.service(ctx)
	if err != nil {
		return nil, nil, err
	}
	det, err := svc.Get(ctx, in.Delivery)
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	b.WriteString(deliveryLine(det.Delivery) + "\n")
	for _, r := range det.Delivery.Refs {
		fmt.Fprintf(&b, "%s %s: %s %s\n", r.Role, r.Type, r.Label, r.URL)
	}
	for _, e := range det.PhaseLog {
		fmt.Fprintf(&b, "%s %s %s (%s by %s) %s\n", baton.FormatTime(e.StartedAt), e.Phase, e.Status, e.Action, e.Actor, e.Note)
	}
	for _, su := range det.SetupRuns {
		fmt.Fprintf(&b, "%s set-up %d for %s: %s, exit %d, %d of %d command(s) ran: %s\n", baton.FormatTime(su.StartedAt), su.N, su.Phase,
			su.Status, su.ExitCode, su.Ran, len(su.Commands), su.Note)
		if su.Status == baton.SetupFailed {
			fmt.Fprintf(&b, "the end of its output:\n%s\n", su.Output)
		}
	}
	return text("%s", b.String()), det.View(s.opts.Now()), nil
}

type deliveryCreateIn struct {
	Issue   string `json:"issue,omitempty" jsonschema:"GitHub issue URL"`
	Repo    string `json:"repo,omitempty" jsonschema:"or a local repository"`
	Summary string `json:"summary,omitempty" jsonschema:"what to deliver (with repo)"`
}

func (s *Server) deliveryCreate(ctx context.Context, _ *sdk.CallToolRequest, in deliveryCreateIn) (*sdk.CallToolResult, any, error) {
	switch {
	case in.Issue == "" && in.Repo == "":
		return nil, nil, baton.Errorf(baton.Invalid, "give issue (a GitHub issue URL), or repo (a local repository) with summary")
	case in.Issue == "" && strings.TrimSpace(in.Summary) == "":
		return nil, nil, baton.Errorf(baton.Invalid, "repo needs summary (or issue) to say what to deliver")
	case s.opts.ReadOnly != "":
		return nil, nil, baton.Errorf(baton.Invalid, "%s", s.opts.ReadOnly)
	}
	if in.Repo != "" && s.opts.Repo != nil {
		repo, err := s.opts.Repo(in.Repo)
		if err != nil {
			return nil, nil, err
		}
		in.Repo = repo
	}
	svc, err := s.service(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, created, err := svc.Create(ctx, delivery.Request{IssueURL: in.Issue, Repo: in.Repo, Summary: in.Summary, Actor: "mcp"})
	if err != nil {
		return nil, nil, err
	}
	verb := "Created"
	if !created {
		verb = "Already there:"
	}
	return text("%s %s. A worker (`baton worker`) runs its phases.", verb, deliveryLine(d)), createdOut{Created: created, Delivery: delivery.NewView(d)}, nil
}

// createdOut is what delivery_create returns, as POST /api/deliveries
// does: whether it was new, and the delivery's view.
type createdOut struct {
	Created  bool          `json:"created"`
	Delivery delivery.View `json:"delivery"`
}

type decisionIn struct {
	Delivery string `json:"delivery" jsonschema:"id or #seq"`
	Note     string `json:"note,omitempty"`
	State    string `json:"state,omitempty" jsonschema:"the view's state seen (refused once it moves)"`
}

type rejectIn struct {
	Delivery string `json:"delivery" jsonschema:"id or #seq"`
	Note     string `json:"note" jsonschema:"the reason"`
	Notes    string `json:"notes,omitempty" jsonschema:"line notes: path:line: text, one a line"`
	State    string `json:"state,omitempty" jsonschema:"the view's state seen (refused once it moves)"`
}

type sayIn struct {
	Delivery string `json:"delivery" jsonschema:"id or #seq"`
	Text     string `json:"text"`
}

func (s *Server) deliverySay(ctx context.Context, _ *sdk.CallToolRequest, in sayIn) (*sdk.CallToolResult, any, error) {
	if s.opts.ReadOnly != "" {
		return nil, nil, baton.Errorf(baton.Invalid, "%s", s.opts.ReadOnly)
	}
	svc, err := s.service(ctx)
	if err != nil {
		return nil, nil, err
	}
	m, err := svc.Say(ctx, in.Delivery, "mcp", in.Text)
	if err != nil {
		return nil, nil, err
	}
	return text("message %d to delivery %s (%s, attempt %d) is queued: the agent gets it at once if it runs, else with the phase's prompt", m.ID, m.DeliveryID, m.Phase, m.Attempt), m, nil
}

func decisionTool(a delivery.Action, desc string, destructive bool) func(*Server) {
	return func(s *Server) {
		ann := &sdk.ToolAnnotations{DestructiveHint: ptr(destructive), OpenWorldHint: ptr(true)}
		sdk.AddTool(s.sdk, &sdk.Tool{Name: "delivery_" + string(a), Annotations: ann, Description: desc},
			func(ctx context.Context, _ *sdk.CallToolRequest, in decisionIn) (*sdk.CallToolResult, any, error) {
				return s.decide(ctx, in.Delivery, in.State, delivery.Decision{Action: a, Note: in.Note})
			})
	}
}

// decide applies dec to the delivery named ref, made on the state named
// state ("" for whatever it is now).
func (s *Server) decide(ctx context.Context, ref, state string, dec delivery.Decision) (*sdk.CallToolResult, any, error) {
	if s.opts.ReadOnly != "" {
		return nil, nil, baton.Errorf(baton.Invalid, "%s", s.opts.ReadOnly)
	}
	on, err := delivery.ParseState(state)
	if err != nil {
		return nil, nil, err
	}
	svc, err := s.service(ctx)
	if err != nil {
		return nil, nil, err
	}
	dec.Actor, dec.On = "mcp", on
	d, err := svc.DecideOn(ctx, ref, dec)
	if err != nil {
		return nil, nil, err
	}
	return text("%s: %s", dec.Action, deliveryLine(d)), delivery.NewView(d), nil
}

// readDelivery is baton://deliveries/{id}: the delivery's view with its
// phase log and agent runs, as JSON (what the delivery tool returns).
func (s *Server) readDelivery(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ref := strings.TrimPrefix(uri, deliveryURI)
	if ref == "" || strings.ContainsAny(ref, "/?#") {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	svc, err := s.service(ctx)
	if err != nil {
		return nil, err
	}
	det, err := svc.Get(ctx, ref)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(det.View(s.opts.Now()), "", "  ")
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// readRunnerTree is baton://runner/tree: the goal-tree runner's tree as
// `baton run tree` prints it.
func (s *Server) readRunnerTree(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, err
	}
	l := goaltree.Layout{Root: st.Root()}
	rs, tree, err := l.LoadStateAndTree()
	if baton.ErrorCode(err) == baton.NotFound {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	if err != nil {
		return nil, err
	}
	sel := goaltree.Select(tree)
	selected := ""
	if sel.Node != nil {
		selected = sel.Node.ID
	}
	c := goaltree.Count(tree)
	body := fmt.Sprintf("run %s: %s; %d of %d leaves passed, %d open, %d stuck\n", rs.RunID, sel.State, c.Passed, c.Leaves, c.Open, c.Stuck) +
		goaltree.Summary(tree, selected, c.Nodes)
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: body}}}, nil
}
