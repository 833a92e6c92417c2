// Package mcp is baton's Model Context Protocol edge: the context store,
// loops and task briefs as MCP tools, resources and prompts, over the
// official Go SDK. Like the CLI it only parses, calls the core (fsstore,
// handoff, loop, brief) and renders; it holds no domain logic.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/goaltree"
)

// Options configure a server. The zero value serves every tool for the
// project around the process's working directory.
type Options struct {
	Version string
	// Root is the project root as the edge resolved it (the CLI's
	// projectRoot), "" when the server starts outside any project. (The
	// client's roots are not followed: the protocol deprecates them, and
	// a client names the project by the directory it starts the server
	// in, or by --root.) WorkDir is where the server started, for
	// messages and the origin remote.
	Root, WorkDir string
	Now           func() time.Time
	// GitHub opens the GitHub API for a repository (the brief tools); nil
	// leaves them answering that this baton has no GitHub access.
	GitHub github.Opener
	// Tools selects the tools served, by name; nil or empty serves all.
	Tools []string
	// Deliveries opens the delivery service; nil when no database is
	// configured, and then the delivery tools are not served.
	Deliveries func(ctx context.Context) (*delivery.Service, error)
	// ReadOnly, when set, refuses every delivery change (create, approve,
	// reject, retry, cancel) with this explanation: a server on the
	// network without an API token only reads.
	ReadOnly string
	// Repo resolves the local repository delivery_create names, refusing
	// the ones this server may not create deliveries in (serve's --repo
	// rule over HTTP); nil takes the path as given, as the CLI does.
	Repo func(path string) (string, error)
	// Watch is how often the store is checked for packets and loops that
	// appeared or went away, to notify clients; 0 picks 2s, <0 never.
	Watch time.Duration
	// ClientEnv is the client's environment when the server is its child
	// (stdio): the variables its harness names its session with
	// (Claude Code gives its MCP servers CLAUDE_CODE_SESSION_ID), which
	// loop_start and handoff default to. Nil over HTTP, where the
	// server's environment is no client's.
	ClientEnv func(string) string
}

// Server is one MCP server over one project's context store.
type Server struct {
	opts Options
	sdk  *sdk.Server

	mu  sync.Mutex
	st  *fsstore.Store    // nil while no project is known
	svc *delivery.Service // opened at the first delivery call
	// stateURI is the registered resource that stands for the store's
	// state (sync), generation counts its changes, runnerListed says
	// whether the runner's tree is registered.
	stateURI     string
	generation   int
	runnerListed bool
	// seen is the state of the store at the last sync; settled is false
	// when it could still change unseen (syncIfChanged).
	seen    watched
	settled bool
	// ticks and syncs count the watch's ticks and the store reads, so a
	// test can tell a watch that stats from one that lists.
	ticks, syncs atomic.Int64
	// calls maps callHeader keys to the contexts of the HTTP requests in
	// flight (HTTPHandler).
	calls sync.Map
}

// noProject is what every store tool says when the server runs outside
// any project.
const noProject = "baton mcp was started outside any project (no git repository and no .agent/context store above %s): start it from the project's directory, or pass --root DIR (or set BATON_ROOT) in the client's MCP configuration"

// New builds the server. It fails only for a --tools list naming tools
// that do not exist.
func New(opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts}
	if opts.Root != "" {
		s.st = fsstore.Open(opts.Root, fsstore.Options{Now: opts.Now})
	}
	tools, err := selectTools(opts.Tools, opts.Deliveries != nil)
	if err != nil {
		return nil, err
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "baton", Title: "baton context store", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: s.instructions(),
		// Only what baton serves: no logging capability it never uses.
		Capabilities: &sdk.ServerCapabilities{},
		PageSize:     PageSize,
	})
	for _, t := range tools {
		t.add(s)
	}
	s.addResources()
	if opts.Deliveries != nil {
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: deliveryURI + "{id}", Name: "delivery", MIMEType: "application/json",
			Description: "A delivery with its refs and phase log"}, s.readDelivery)
	}
	s.addPrompts()
	// The store is read when a client first lists resources, not at start:
	// a client waits for initialize, and a large store would delay it.
	s.sdk.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			ctx, done := s.callContext(ctx, method, req)
			defer done()
			if method == "resources/list" {
				s.syncIfChanged()
				var cursor string
				if p, ok := req.GetParams().(*sdk.ListResourcesParams); ok && p != nil {
					cursor = p.Cursor
				}
				return s.listResources(cursor)
			}
			res, err := next(ctx, method, req)
			if err != nil && (method == "prompts/get" || method == "resources/read") {
				err = rpcError(err)
			}
			return res, err
		}
	})
	return s, nil
}

// rpcError gives a prompt's or a resource's error the JSON-RPC code the MCP
// specification asks for: a request that names something wrong or missing
// is -32602 (invalid params; a resource that does not exist is the same
// code), anything else -32603 (internal). A plain error would go out with
// code 0, which clients cannot tell apart. The message stays baton's.
func rpcError(err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return err
	}
	code := int64(jsonrpc.CodeInternalError)
	switch baton.ErrorCode(err) {
	case baton.Invalid, baton.NotFound, baton.Conflict:
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: err.Error()}
}

// SDK returns the underlying server, for transports.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Run serves one session on t until the client goes away or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.Close()
	go s.Watch(ctx)
	return s.sdk.Run(ctx, t)
}

func (s *Server) instructions() string {
	if st := s.store(); st != nil {
		return "baton keeps this project's working context in " + st.Dir() + ": handoff packets (pickup renders one as a prompt), loops, and the files agents touched. Start a session with the pickup tool; end one with handoff."
	}
	return fmt.Sprintf(noProject, s.opts.WorkDir)
}

// store returns the project's store, or nil outside any project.
func (s *Server) store() *fsstore.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// readStore returns the store for a tool that reads it.
func (s *Server) readStore() (*fsstore.Store, error) {
	st := s.store()
	if st == nil {
		return nil, baton.Errorf(baton.NotFound, noProject, s.opts.WorkDir)
	}
	return st, nil
}

// writeStore returns the store for a tool that writes, creating it in
// the project when it is missing.
func (s *Server) writeStore(ctx context.Context) (*fsstore.Store, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, err
	}
	if _, err := st.Init(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// PageSize is how many resources (or tools, or prompts) one list answer
// holds; a client asks for the next page with the cursor it gives. A
// store of thousands of packets would otherwise answer one list in
// megabytes.
const PageSize = 100

// Watch announces packets and loops that appear or go away while the
// server runs, whoever wrote them (a hook, the CLI, another agent). Each
// tick stats the packet and loop directories and the runner's state; the
// store is read only when one of them changed.
func (s *Server) Watch(ctx context.Context) {
	every := s.opts.Watch
	switch {
	case every < 0:
		return
	case every == 0:
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.ticks.Add(1)
			s.syncIfChanged()
		}
	}
}

// watched is what tells syncIfChanged the store changed.
type watched struct {
	store  fsstore.Changes
	runner [2]int64 // the runner state file's mtime and size; zero when absent
}

// syncIfChanged syncs when the store or the runner's state changed since
// the last sync, or could have changed unseen.
func (s *Server) syncIfChanged() {
	st := s.store()
	if st == nil {
		return
	}
	var w watched
	var settled bool
	w.store, settled = st.Changes()
	if fi, err := os.Stat(goaltree.Layout{Root: st.Root()}.State(goaltree.RunStateFile)); err == nil {
		w.runner = [2]int64{fi.ModTime().UnixNano(), fi.Size()}
	}
	s.mu.Lock()
	same := s.settled && s.seen == w
	s.seen, s.settled = w, settled
	s.mu.Unlock()
	if !same {
		s.sync()
	}
}

// sync announces that the store changed (resources/list_changed) and
// registers the runner's tree while a run exists. The packets and loops
// are not registered one by one: resources/list reads them from the
// store's index a page at a time (listResources). The SDK announces a
// change of its own set of resources only, so the store's state is one
// registered resource whose URI changes with it; listResources never
// lists it.
func (s *Server) sync() {
	st := s.store()
	if st == nil {
		return
	}
	s.syncs.Add(1)
	_, runErr := (goaltree.Layout{Root: st.Root()}).LoadRunState()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stateURI != "" {
		s.sdk.RemoveResources(s.stateURI)
	}
	s.generation++
	s.stateURI = fmt.Sprintf("%s%d", stateURI, s.generation)
	s.sdk.AddResource(&sdk.Resource{URI: s.stateURI, Name: "store state", MIMEType: "text/plain",
		Description: "changes whenever the store's packets or loops do"}, s.readState)
	switch {
	case runErr == nil && !s.runnerListed:
		s.sdk.AddResource(runnerResource, s.readRunnerTree)
		s.runnerListed = true
	case runErr != nil && s.runnerListed:
		s.sdk.RemoveResources(runnerTreeURI)
		s.runnerListed = false
	}
}

// stateURI prefixes the registered resource that stands for the store's
// state.
const stateURI = "baton://store/state/"

var runnerResource = &sdk.Resource{URI: runnerTreeURI, Name: "runner tree", MIMEType: "text/plain",
	Description: "The goal-tree runner's tree (baton run tree)"}

// readState answers a read of the store-state resource: it names no
// content, only a change.
func (s *Server) readState(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain",
		Text: "The store changed: list the resources again."}}}, nil
}

// listResources answers resources/list: the packets, newest first, then
// the loops, newest first, then the runner's tree while a run exists,
// PageSize at a time. Each page reads the index and stats the files it
// lists, whatever the store holds. The cursor names the last resource
// given ("p" and a packet cursor, "l" and a loop id).
func (s *Server) listResources(cursor string) (*sdk.ListResourcesResult, error) {
	res := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	st := s.store()
	if st == nil {
		return res, nil
	}
	bad := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cursor is not one baton gave: list the resources again without it"}
	kind, after := "p", ""
	if cursor != "" {
		kind, after = cursor[:1], cursor[1:]
		if kind != "p" && kind != "l" && kind != "r" {
			return nil, bad
		}
	}
	room := PageSize
	if kind == "p" {
		page, err := st.ListPackets(fsstore.PacketQuery{Limit: room, Cursor: after})
		if baton.ErrorCode(err) == baton.Invalid {
			return nil, bad
		} else if err != nil {
			return nil, err
		}
		for _, p := range page.Summaries {
			res.Resources = append(res.Resources, &sdk.Resource{URI: packetURI + p.ID, Name: "packet " + p.ID, MIMEType: "text/markdown",
				Description: "handoff packet (" + string(p.Status) + "): " + p.Purpose})
		}
		room -= len(page.Summaries)
		if page.Next != "" {
			res.NextCursor = "p" + page.Next
			return res, nil
		}
		kind, after = "l", ""
	}
	if kind == "l" {
		ls, _, err := st.ListLoops(fsstore.LoopFilter{})
		if err != nil {
			return nil, err
		}
		start := 0
		if after != "" {
			start = slices.IndexFunc(ls, func(l *baton.Loop) bool { return l.ID == after }) + 1 // a loop gone since: from the first
		}
		for _, l := range ls[start:] {
			if room == 0 {
				res.NextCursor = "l" + res.Resources[len(res.Resources)-1].URI[len(loopURI):]
				return res, nil
			}
			res.Resources = append(res.Resources, &sdk.Resource{URI: loopURI + l.ID, Name: "loop " + l.ID, MIMEType: "text/markdown",
				Description: "loop (" + string(l.Status) + ")"})
			room--
		}
	}
	if _, err := (goaltree.Layout{Root: st.Root()}).LoadRunState(); err == nil {
		if room == 0 {
			res.NextCursor = "r"
			return res, nil
		}
		res.Resources = append(res.Resources, runnerResource)
	}
	return res, nil
}

// toolNames lists every tool baton can serve, in the order served; the
// delivery tools only with a database.
func toolNames() []string {
	var names []string
	for _, t := range append(slices.Clone(allTools), deliveryTools...) {
		names = append(names, t.name)
	}
	return names
}

func selectTools(names []string, withDeliveries bool) ([]tool, error) {
	all := allTools
	if withDeliveries {
		all = append(slices.Clone(allTools), deliveryTools...)
	}
	if len(names) == 0 {
		return all, nil
	}
	var out []tool
	for _, t := range all {
		if slices.Contains(names, t.name) {
			out = append(out, t)
		}
	}
	for _, n := range names {
		if slices.ContainsFunc(all, func(t tool) bool { return t.name == n }) {
			continue
		}
		if slices.ContainsFunc(deliveryTools, func(t tool) bool { return t.name == n }) {
			return nil, baton.Errorf(baton.Invalid, "--tools: %s needs a delivery database (--db, or BATON_DATABASE_URL)", n)
		}
		return nil, baton.Errorf(baton.Invalid, "--tools: no tool %q (baton serves %s)", n, strings.Join(toolNames(), ", "))
	}
	return out, nil
}
