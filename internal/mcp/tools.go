package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/brief"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/handoff"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/prompt"
	"github.com/baton-agent/baton/internal/prompt/budget"
	"github.com/baton-agent/baton/internal/search"
)

// tool is one MCP tool: its name and how it registers itself.
type tool struct {
	name string
	add  func(s *Server)
}

// Annotations, said truthfully: reads are read-only; a write says whether
// it destroys anything and whether repeating it changes more.
var (
	readOnly   = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	readRemote = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(true)}
	appends    = &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	ends       = &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}
)

func ptr[T any](v T) *T { return &v }

// addTool registers a tool whose input schema comes from In, with no
// property that takes null. jsonschema-go makes every slice and pointer
// field nullable; for a required list (files_add's paths) that advertised
// a null the handler then refused, and a null is never how an agent should
// leave an optional argument out.
func addTool[In, Out any](s *Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("input schema of tool %s: %v", t.Name, err)) // a programming error, caught by every test
	}
	for _, p := range schema.Properties {
		if i := slices.Index(p.Types, "null"); i >= 0 {
			p.Types = slices.Delete(p.Types, i, i+1)
			if len(p.Types) == 1 {
				p.Type, p.Types = p.Types[0], nil
			}
		}
	}
	t.InputSchema = schema
	sdk.AddTool(s.sdk, t, h)
}

// allTools is every tool, in the order tools/list gives them. The
// descriptions are short on purpose: the list costs context on every turn.
var allTools = []tool{
	{"pickup", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "pickup", Annotations: readOnly,
			Description: "Render a packet as the prompt to continue from (default: the latest draft/active)."}, s.pickup)
	}},
	{"handoff", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "handoff", Annotations: appends,
			Description: "Write a handoff packet for the next session."}, s.handoff)
	}},
	{"packets", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "packets", Annotations: readOnly,
			Description: "List handoff packets, newest first."}, s.packets)
	}},
	{"files", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "files", Annotations: readOnly,
			Description: "Files agents touched since the last packet (or all), ranked."}, s.files)
	}},
	{"files_add", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "files_add", Annotations: appends,
			Description: "Record files as confirmed relevant."}, s.filesAdd)
	}},
	{"loop_start", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "loop_start", Annotations: appends,
			Description: "Start a loop: its prompt returns at each stop until you state a promise."}, s.loopStart)
	}},
	{"loop_status", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "loop_status", Annotations: readOnly,
			Description: "Show a loop (default: the foreground loop)."}, s.loopStatus)
	}},
	{"loop_cancel", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "loop_cancel", Annotations: ends,
			Description: "Cancel a loop (default: the foreground loop); it is kept."}, s.loopCancel)
	}},
	{"search", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "search", Annotations: readOnly,
			Description: "Find words in packets, loops and notes (and transcripts if on), best first."}, s.search)
	}},
	{"review_pr_brief", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "review_pr_brief", Annotations: readRemote,
			Description: "Brief for reviewing a GitHub pull request and its diff."}, s.reviewPRBrief)
	}},
	{"fix_issue_brief", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "fix_issue_brief", Annotations: readRemote,
			Description: "Brief for fixing a GitHub issue."}, s.fixIssueBrief)
	}},
	{"implement_feature_brief", func(s *Server) {
		addTool(s, &sdk.Tool{Name: "implement_feature_brief", Annotations: readRemote,
			Description: "Brief for implementing a feature from a GitHub issue or a request in words."}, s.implementFeatureBrief)
	}},
}

// text is a tool result whose content is text for the model; the
// structured output travels beside it.
func text(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

type pickupIn struct {
	Packet       string `json:"packet,omitempty" jsonschema:"id, prefix or latest (default)"`
	BudgetBytes  int    `json:"budget_bytes,omitempty" jsonschema:"prompt size limit (default 40000)"`
	BudgetTokens int    `json:"budget_tokens,omitempty" jsonschema:"token limit (o200k)"`
}

type pickupOut struct {
	PacketID string   `json:"packet_id"`
	Status   string   `json:"status"`
	Purpose  string   `json:"purpose"`
	Fallback bool     `json:"fallback,omitempty"`
	Bytes    int      `json:"bytes"`
	Tokens   int      `json:"tokens,omitempty"`
	Cut      []string `json:"cut,omitempty"`
	// Skipped are the packets that could not be read on the way to
	// latest (too large, damaged, a merge's conflict markers): the packet
	// picked up may not be the one the agent meant.
	Skipped []string `json:"skipped,omitempty"`
	// Prompt is the rendered packet. It is also the text content, but
	// Claude Code gives the model only the structured output when there
	// is one, so the prompt must be in it.
	Prompt string `json:"prompt"`
}

func (s *Server) pickup(ctx context.Context, _ *sdk.CallToolRequest, in pickupIn) (*sdk.CallToolResult, any, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, nil, err
	}
	opts, err := budget.Parse(in.BudgetBytes, in.BudgetTokens)
	if err != nil {
		return nil, nil, err
	}
	picked, err := handoff.Pickup(ctx, st, in.Packet, opts)
	if err != nil {
		if picked != nil && len(picked.Skipped) > 0 {
			return nil, nil, fmt.Errorf("%w; %s", err, skippedNote(picked.Skipped))
		}
		return nil, nil, err
	}
	p, pack := picked.Packet, picked.Pack
	out := pickupOut{PacketID: p.ID, Status: string(p.Status), Purpose: p.Purpose, Fallback: picked.Fallback, Bytes: pack.Report.Bytes, Tokens: pack.Report.Tokens, Prompt: pack.Text}
	for _, sec := range pack.Report.Sections {
		if sec.Outcome == prompt.Dropped || sec.Outcome == prompt.Truncated {
			out.Cut = append(out.Cut, sec.Key+" ("+string(sec.Outcome)+")")
		}
	}
	res := text("%s", pack.Text)
	if len(picked.Skipped) > 0 {
		for _, e := range picked.Skipped {
			out.Skipped = append(out.Skipped, e.Error())
		}
		// A second text block, so the first stays the prompt itself.
		res.Content = append(res.Content, &sdk.TextContent{Text: fmt.Sprintf("This is packet %s; %s", p.ID, skippedNote(picked.Skipped))})
	}
	return res, out, nil
}

// skippedNote says which packets pickup passed over because they could
// not be read, and what to do: a newer packet may be among them.
func skippedNote(skipped []error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "skipped %d packet(s) that cannot be read, which may be newer:", len(skipped))
	for _, e := range skipped {
		b.WriteString(" ")
		b.WriteString(e.Error())
		b.WriteString(".")
	}
	b.WriteString(" Fix or move them, then pick up again.")
	return b.String()
}

type handoffIn struct {
	Purpose    string   `json:"purpose" jsonschema:"what the next session should achieve"`
	Body       string   `json:"body,omitempty" jsonschema:"markdown: ## Intent, Context, Decisions, Plan, Open Questions"`
	NextPrompt string   `json:"next_prompt,omitempty" jsonschema:"the prompt the next session starts from"`
	Files      []string `json:"files,omitempty" jsonschema:"confirmed relevant paths"`
	Validators []string `json:"validators,omitempty" jsonschema:"commands that prove it done"`
	SessionID  string   `json:"session_id,omitempty" jsonschema:"harness session id"`
}

type handoffOut struct {
	ID        string   `json:"id"`
	Path      string   `json:"path"`
	Confirmed []string `json:"relevant_files_confirmed"`
	Suggested []string `json:"relevant_files_suggested"`
	Warnings  []string `json:"warnings,omitempty"`
}

func (s *Server) handoff(ctx context.Context, _ *sdk.CallToolRequest, in handoffIn) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.Purpose) == "" {
		return nil, nil, baton.Errorf(baton.Invalid, "purpose is empty: say in one line what the next session should achieve")
	}
	st, err := s.writeStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	hin := handoff.Input{Purpose: in.Purpose, Body: in.Body, NextPrompt: in.NextPrompt, Files: in.Files, Validators: in.Validators,
		Source: "mcp", SessionID: in.SessionID, WorkDir: st.Root()}
	if in.SessionID == "" {
		sess := s.clientSession(st)
		hin.SessionID, hin.TranscriptPath = sess.ID, sess.TranscriptPath
	}
	if hin.SessionID != "" && hin.TranscriptPath == "" {
		if rec, err := st.FindSession(hin.SessionID); err == nil {
			hin.TranscriptPath = rec.TranscriptPath
		}
	}
	res, err := handoff.Create(ctx, st, s.opts.Now(), hin)
	if err != nil {
		return nil, nil, err
	}
	s.syncIfChanged()
	out := handoffOut{ID: res.Packet.ID, Path: res.Path, Confirmed: nonNil(res.Packet.RelevantFilesConfirmed), Suggested: nonNil(res.Packet.RelevantFilesSuggested), Warnings: res.Warnings}
	return text("Wrote packet %s (%s). The next session continues with the pickup tool, or `baton pickup %s`.", res.Packet.ID, res.Path, res.Packet.ID), out, nil
}

type packetsIn struct {
	Status string `json:"status,omitempty" jsonschema:"draft, active, done or blocked (default all)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 20"`
	Cursor string `json:"cursor,omitempty"`
}

type packetRow struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Purpose   string `json:"purpose"`
	UpdatedAt string `json:"updated_at"`
}

type packetsOut struct {
	Packets    []packetRow `json:"packets"`
	More       int         `json:"more,omitempty"`
	NextCursor string      `json:"next_cursor,omitempty"`
	Skipped    []string    `json:"skipped,omitempty"`
}

func (s *Server) packets(_ context.Context, _ *sdk.CallToolRequest, in packetsIn) (*sdk.CallToolResult, any, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, nil, err
	}
	status := baton.PacketStatus(in.Status)
	if status != "" && !status.Valid() {
		return nil, nil, baton.Errorf(baton.Invalid, "status %q is not one of draft, active, done, blocked", in.Status)
	}
	if in.Limit < 0 {
		return nil, nil, baton.Errorf(baton.Invalid, "limit must not be negative (got %d)", in.Limit)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	page, err := st.ListPackets(fsstore.PacketQuery{Status: status, Limit: limit, Cursor: in.Cursor})
	if err != nil {
		return nil, nil, err
	}
	out := packetsOut{Packets: []packetRow{}, More: page.More, NextCursor: page.Next}
	var b strings.Builder
	for _, p := range page.Summaries {
		out.Packets = append(out.Packets, packetRow{ID: p.ID, Status: string(p.Status), Purpose: p.Purpose, UpdatedAt: baton.FormatTime(p.UpdatedAt)})
		fmt.Fprintf(&b, "%s  %s  %s\n", p.ID, p.Status, p.Purpose)
	}
	for _, w := range page.Skipped {
		out.Skipped = append(out.Skipped, w.Error())
	}
	switch {
	case len(out.Packets) == 0 && in.Cursor == "":
		b.WriteString("No packets. Write one with the handoff tool.\n")
	case out.More > 0:
		fmt.Fprintf(&b, "(%d more; cursor %s gives the next page)\n", out.More, out.NextCursor)
	}
	return text("%s", b.String()), out, nil
}

type filesIn struct {
	All   bool   `json:"all,omitempty" jsonschema:"the whole log"`
	Since string `json:"since,omitempty" jsonschema:"only after this packet (id, prefix or latest)"`
	Limit int    `json:"limit,omitempty" jsonschema:"default 30"`
}

type filesOut struct {
	Since        string             `json:"since,omitempty"`
	Files        []fsstore.FileRank `json:"files"`
	More         int                `json:"more,omitempty"`
	SkippedLines int                `json:"skipped_lines,omitempty"`
	Approximate  bool               `json:"approximate,omitempty"`
}

// defaultFiles is how many files the files tool lists unless asked: the
// list costs the model context, and the best-ranked files come first.
const defaultFiles = 30

func (s *Server) files(_ context.Context, _ *sdk.CallToolRequest, in filesIn) (*sdk.CallToolResult, any, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, nil, err
	}
	limit := in.Limit
	if limit == 0 {
		limit = defaultFiles
	}
	res, err := st.Files(fsstore.FilesRequest{Since: in.Since, All: in.All, Limit: limit})
	if err != nil {
		return nil, nil, err
	}
	out := filesOut{Files: res.Files, More: res.More, SkippedLines: res.SkippedLines, Approximate: res.Approximate}
	if res.Since != nil {
		out.Since = res.Since.ID
	}
	var b strings.Builder
	for _, r := range res.Files {
		fmt.Fprintf(&b, "%s (%s, %d×, last %s)\n", r.Path, r.Source, r.Count, baton.FormatTime(r.LastSeen))
	}
	if len(res.Files) == 0 {
		b.WriteString("No relevant files recorded")
		if out.Since != "" {
			b.WriteString(" since packet " + out.Since + " (all: true lists the whole log)")
		}
		b.WriteString(".\n")
	}
	if res.More > 0 {
		fmt.Fprintf(&b, "(%d more; raise limit)\n", res.More)
	}
	if res.SkippedLines > 0 {
		fmt.Fprintf(&b, "(skipped %d unreadable line(s) in %s)\n", res.SkippedLines, fsstore.RelevantFilesLog)
	}
	return text("%s", b.String()), out, nil
}

type filesAddIn struct {
	Paths     []string `json:"paths" jsonschema:"relative to the project root"`
	Packet    string   `json:"packet,omitempty" jsonschema:"their packet (id, prefix or latest)"`
	MissingOK bool     `json:"missing_ok,omitempty" jsonschema:"record paths not written yet"`
}

func (s *Server) filesAdd(ctx context.Context, _ *sdk.CallToolRequest, in filesAddIn) (*sdk.CallToolResult, any, error) {
	if len(in.Paths) == 0 {
		return nil, nil, baton.Errorf(baton.Invalid, "paths is empty: name the files that matter")
	}
	st, err := s.writeStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	packetID := ""
	if in.Packet != "" {
		p, err := st.ResolvePacket(in.Packet)
		if err != nil {
			return nil, nil, err
		}
		packetID = p.ID
	}
	recorded, err := st.ConfirmFiles(ctx, st.Root(), in.Paths, packetID, in.MissingOK, s.opts.Now())
	if err != nil {
		return nil, nil, err
	}
	return text("Recorded as confirmed: %s", strings.Join(recorded, ", ")), map[string]any{"recorded": recorded}, nil
}

type loopStartIn struct {
	Prompt        string   `json:"prompt,omitempty" jsonschema:"the prompt to repeat"`
	FromPacket    string   `json:"from_packet,omitempty" jsonschema:"or the prompt of this packet (id or latest)"`
	MaxIterations *int     `json:"max_iterations,omitempty" jsonschema:"limit (default 20; 0 = none)"`
	Promises      []string `json:"promises,omitempty" jsonschema:"texts that end the loop (default DONE)"`
	SessionID     string   `json:"session_id,omitempty" jsonschema:"default: this session, else first to stop"`
	// Budgets, as the CLI's --max-tokens, --max-cost and --max-duration.
	MaxTokens          int64   `json:"max_tokens,omitempty"`
	MaxCostUSD         float64 `json:"max_cost_usd,omitempty"`
	MaxDurationSeconds float64 `json:"max_duration_seconds,omitempty"`
	// Verify, as the CLI's --verify and --verify-timeout.
	Verify               []string `json:"verify,omitempty" jsonschema:"commands a promise must pass"`
	VerifyTimeoutSeconds float64  `json:"verify_timeout_seconds,omitempty"`
	// StallRounds, as the CLI's --stall-rounds.
	StallRounds int `json:"stall_rounds,omitempty" jsonschema:"rounds without progress that pause it (default 3)"`
}

// loopView is l as the loop tools give it: the view every edge shows
// (loop.View), with its prompt or without.
func loopView(st *fsstore.Store, l *baton.Loop, withPrompt bool, now time.Time) loop.View {
	fg, _ := st.Foreground()
	path, _ := st.LoopPath(l.ID)
	if withPrompt {
		return loop.NewView(l, path, fg, now)
	}
	return loop.NewListItem(l, path, fg, now)
}

func (s *Server) loopStart(ctx context.Context, _ *sdk.CallToolRequest, in loopStartIn) (*sdk.CallToolResult, any, error) {
	switch {
	case strings.TrimSpace(in.Prompt) == "" && in.FromPacket == "":
		return nil, nil, baton.Errorf(baton.Invalid, "give the loop a prompt, or from_packet (an id or latest)")
	case in.Prompt != "" && in.FromPacket != "":
		return nil, nil, baton.Errorf(baton.Invalid, "give prompt or from_packet, not both")
	}
	max := -1 // the packet's limit, else the default
	if in.MaxIterations != nil {
		if *in.MaxIterations < 0 {
			return nil, nil, baton.Errorf(baton.Invalid, "max_iterations must not be negative (0 means no limit)")
		}
		max = *in.MaxIterations
	}
	if in.MaxTokens < 0 || in.MaxCostUSD < 0 || in.MaxDurationSeconds < 0 || in.VerifyTimeoutSeconds < 0 {
		return nil, nil, baton.Errorf(baton.Invalid, "max_tokens, max_cost_usd, max_duration_seconds and verify_timeout_seconds must be 0 (no limit; the default timeout) or more")
	}
	st, err := s.writeStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A loop from a packet runs the packet's validators, which a checkout
	// may have carried: started by an agent, it waits for a person to
	// adopt it.
	if in.SessionID == "" {
		in.SessionID = s.clientSession(st).ID
	}
	l, _, err := loop.Start(ctx, st, loop.StartRequest{Prompt: in.Prompt, FromPacket: in.FromPacket, MaxIterations: max, Promises: in.Promises, SessionID: in.SessionID,
		MaxTokens: in.MaxTokens, MaxCostUSD: in.MaxCostUSD, MaxDuration: seconds(in.MaxDurationSeconds),
		Verify: in.Verify, VerifyTimeout: seconds(in.VerifyTimeoutSeconds), StallRounds: in.StallRounds, Now: s.opts.Now(), NoAdopt: true})
	if err != nil {
		return nil, nil, err
	}
	s.syncIfChanged()
	if fg, _ := st.Foreground(); !fg.Trusts(l) {
		return text("Loop %s was created from packet %s, whose validators it would run as its verify commands; it does not run until the user reads it (`baton loop show %s`) and adopts it (`baton loop adopt %s`).", l.ID, l.SourcePacketID, l.ID, l.ID), loopView(st, l, false, s.opts.Now()), nil
	}
	limit := "no iteration limit"
	if l.MaxIterations > 0 {
		limit = fmt.Sprintf("at most %d iterations", l.MaxIterations)
	}
	if b := loop.Budgets(l); b != "" {
		limit += "; it pauses at " + b
	}
	return text("Loop %s started (%s). Work on the prompt now; at each stop it comes back until you %s.", l.ID, limit, loop.HowToFinish(l)), loopView(st, l, false, s.opts.Now()), nil
}

type loopRefIn struct {
	Loop string `json:"loop,omitempty" jsonschema:"id or prefix (default: the foreground loop)"`
}

func (s *Server) loopStatus(_ context.Context, _ *sdk.CallToolRequest, in loopRefIn) (*sdk.CallToolResult, any, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, nil, err
	}
	l, err := loop.Resolve(st, in.Loop, "")
	if err != nil {
		return nil, nil, err
	}
	msg := fmt.Sprintf("Loop %s: %s. ", l.ID, l.Status)
	if l.Status == baton.LoopActive || l.Status == baton.LoopPaused {
		msg += loop.StatusLine(l)
	} else {
		msg += "Outcome: " + l.Outcome
	}
	return text("%s\nPrompt:\n%s", msg, l.Prompt), loopView(st, l, true, s.opts.Now()), nil
}

func (s *Server) loopCancel(ctx context.Context, _ *sdk.CallToolRequest, in loopRefIn) (*sdk.CallToolResult, any, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, nil, err
	}
	l, err := loop.Resolve(st, in.Loop, "")
	if err != nil {
		return nil, nil, err
	}
	l, from, err := loop.SetStatus(ctx, st, l.ID, loop.StatusChange{Change: loop.Cancel, Now: s.opts.Now()})
	if err != nil {
		return nil, nil, err
	}
	return text("Loop %s: %s -> cancelled at iteration %d.", l.ID, from, l.Iteration), loopView(st, l, false, s.opts.Now()), nil
}

// searchIn is only the words: the list of tools costs context on every
// turn (`baton search` has --kind and --limit).
type searchIn struct {
	Query string `json:"query"`
}

// defaultSearch is how many results the search tool gives unless asked:
// each costs the model context.
const defaultSearch = 10

func (s *Server) search(ctx context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
	q := search.Query{Text: in.Query, Limit: defaultSearch}
	st, err := s.readStore()
	if err != nil {
		return nil, nil, err
	}
	res, _, err := search.Run(ctx, st, q)
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	for _, r := range res {
		fmt.Fprintf(&b, "%s %s (%s): %s\n  %s\n", r.Kind, r.ID, r.Path, r.Title, strings.Join(strings.Fields(r.Snippet), " "))
	}
	if len(res) == 0 {
		fmt.Fprintf(&b, "Nothing matches %q.\n", in.Query)
	}
	if res == nil {
		res = []search.Result{}
	}
	return text("%s", b.String()), map[string]any{"results": res}, nil
}

type reviewIn struct {
	PR          string `json:"pr" jsonschema:"pull request number or URL"`
	Repo        string `json:"repo,omitempty" jsonschema:"owner/name"`
	BudgetBytes int    `json:"budget_bytes,omitempty"`
}

type issueIn struct {
	Issue       string `json:"issue" jsonschema:"issue number or URL"`
	Repo        string `json:"repo,omitempty" jsonschema:"owner/name"`
	Comments    *int   `json:"comments,omitempty" jsonschema:"recent comments (default 10)"`
	BudgetBytes int    `json:"budget_bytes,omitempty"`
}

type featureIn struct {
	Issue       string `json:"issue,omitempty" jsonschema:"issue number or URL"`
	Request     string `json:"request,omitempty" jsonschema:"or the feature in words"`
	Repo        string `json:"repo,omitempty" jsonschema:"owner/name"`
	BudgetBytes int    `json:"budget_bytes,omitempty"`
}

// briefOut is what every brief tool returns: the brief (in the
// structured output too, which is all Claude Code shows the model) and
// what it is about.
type briefOut struct {
	Repo   string `json:"repo,omitempty"`
	Number int    `json:"number,omitempty"`
	Bytes  int    `json:"bytes"`
	Brief  string `json:"brief"`
}

// openRequest names the repository for a brief: the argument's URL, else
// repo, else the origin remote of the project.
func (s *Server) openRequest(repo string, fromURL *github.Repo) github.OpenRequest {
	dir := s.opts.WorkDir
	if st := s.store(); st != nil {
		dir = st.Root()
	}
	return github.OpenRequest{Dir: dir, Repo: repo, FromURL: fromURL}
}

func (s *Server) reviewPRBrief(ctx context.Context, _ *sdk.CallToolRequest, in reviewIn) (*sdk.CallToolResult, any, error) {
	number, fromURL, ok := github.ParseNumber(in.PR, "pull", "pulls")
	if !ok {
		return nil, nil, baton.Errorf(baton.Invalid, "pr must be a pull request number, such as 24, #24 or a pull request URL (got %q)", in.PR)
	}
	opts, err := budget.Parse(in.BudgetBytes, 0)
	if err != nil {
		return nil, nil, err
	}
	b, err := brief.Review(ctx, brief.ReviewRequest{GitHub: s.opts.GitHub, Repo: s.openRequest(in.Repo, fromURL), Number: number, Pack: opts})
	if err != nil {
		return nil, nil, err
	}
	return text("%s", b.Pack.Text), briefOut{Repo: b.Repo.String(), Number: number, Bytes: b.Pack.Report.Bytes, Brief: b.Pack.Text}, nil
}

func (s *Server) fixIssueBrief(ctx context.Context, _ *sdk.CallToolRequest, in issueIn) (*sdk.CallToolResult, any, error) {
	number, fromURL, ok := github.ParseNumber(in.Issue, "issues")
	if !ok {
		return nil, nil, baton.Errorf(baton.Invalid, "issue must be an issue number, such as 7, #7 or an issue URL (got %q)", in.Issue)
	}
	comments := brief.DefaultComments
	if in.Comments != nil {
		comments = *in.Comments
	}
	return s.issueBrief(ctx, brief.IssueRequest{Task: brief.FixIssue, Number: number, Repo: s.openRequest(in.Repo, fromURL), Comments: comments},
		in.BudgetBytes)
}

func (s *Server) implementFeatureBrief(ctx context.Context, _ *sdk.CallToolRequest, in featureIn) (*sdk.CallToolResult, any, error) {
	req := brief.IssueRequest{Task: brief.ImplementFeature, Request: in.Request, Comments: brief.DefaultComments}
	if in.Issue != "" {
		number, fromURL, ok := github.ParseNumber(in.Issue, "issues")
		if !ok {
			return nil, nil, baton.Errorf(baton.Invalid, "issue must be an issue number, such as 42, #42 or an issue URL (got %q)", in.Issue)
		}
		req.Number, req.Repo = number, s.openRequest(in.Repo, fromURL)
	}
	return s.issueBrief(ctx, req, in.BudgetBytes)
}

func (s *Server) issueBrief(ctx context.Context, req brief.IssueRequest, budgetBytes int) (*sdk.CallToolResult, any, error) {
	var err error
	if req.Pack, err = budget.Parse(budgetBytes, 0); err != nil {
		return nil, nil, err
	}
	req.GitHub, req.Store = s.opts.GitHub, s.store()
	b, err := brief.Issue(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	out := briefOut{Bytes: b.Pack.Report.Bytes, Brief: b.Pack.Text}
	if req.Number > 0 {
		out.Repo, out.Number = b.Repo.String(), req.Number
	}
	return text("%s", b.Pack.Text), out, nil
}

// nonNil makes a nil slice an empty one, so JSON says [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// seconds is a duration given in seconds, to the millisecond.
func seconds(s float64) time.Duration { return time.Duration(s*1000) * time.Millisecond }

// clientSession is the session of the harness that started this server
// (loop.CurrentSession over Options.ClientEnv); the zero Session when it
// names none or the server is on HTTP.
func (s *Server) clientSession(st *fsstore.Store) loop.Session {
	if s.opts.ClientEnv == nil {
		return loop.Session{}
	}
	return loop.CurrentSession(st, s.opts.ClientEnv)
}
