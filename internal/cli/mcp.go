package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/mcp"
)

type mcpOptions struct {
	tools, repos []string
	httpAddr, db string
	sessionIdle  time.Duration
}

func newMCPCmd(f *Factory) *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the context store, loops and briefs over MCP",
		Long: `Serve baton to any MCP client (Claude Code, Codex, Droid, Cursor, VS Code, Zed, ...)
over stdio, or the streamable HTTP transport with --http.

Tools: pickup, handoff, packets, files, files_add, loop_start, loop_status,
loop_cancel, search, review_pr_brief, fix_issue_brief, implement_feature_brief; and,
when a delivery database is configured (--db, BATON_DATABASE_URL, or an
existing <data dir>/baton.db), deliveries, delivery, delivery_create,
delivery_approve, delivery_reject, delivery_retry, delivery_cancel.

Resources: baton://packets/{id} and baton://loops/{id}, listed and announced
as they appear; baton://runner/tree while a goal-tree run exists;
baton://deliveries/{id} with a database. Prompts: pickup, handoff,
review-pr, fix-issue, implement-feature.

The project is found as the CLI finds it: --root or BATON_ROOT, else from the
working directory the client starts the server in. Outside any project the
server still answers and every tool says how to point it at one.

On stdio a line that is not a JSON-RPC message is answered with a parse
error (-32700) and the session goes on; a batch is taken on protocol
2025-03-26, the one revision that has batches. --http takes baton serve's API token
(BATON_API_TOKEN, else the token file serve keeps in the data directory)
and its rules: with a token every request needs "Authorization: Bearer
<token>" (ten wrong ones in a minute get 429); without one it listens on
loopback only and changes no delivery. Over HTTP delivery_create takes
only the repository it runs in and each --repo, as baton serve does; a
session that makes no request for --session-idle (30m) is closed, and a
call whose HTTP request ends (the client hung up) is cancelled.

baton install claude|codex|droid registers this server for you.`,
		Example: `  baton mcp                                   # stdio, as a client starts it
  baton mcp --tools pickup,handoff,packets    # a smaller tool list
  baton mcp --http 127.0.0.1:7071
  baton mcp --http 127.0.0.1:7071 --repo ~/src/app --repo ~/src/api`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCP(cmd.Context(), f, o)
		},
	}
	cmd.Flags().StringSliceVar(&o.tools, "tools", nil, "serve only these `TOOLS` (comma-separated; default all)")
	cmd.Flags().StringVar(&o.httpAddr, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	cmd.Flags().StringVar(&o.db, "db", "", "the delivery database, SQLite file or postgres:// URL (default: BATON_DATABASE_URL, else <data dir>/baton.db when it exists)")
	cmd.Flags().StringArrayVar(&o.repos, "repo", nil, "with --http: local repository delivery_create may name (repeatable; default: the one it runs in)")
	cmd.Flags().DurationVar(&o.sessionIdle, "session-idle", mcp.DefaultSessionIdle, "with --http: close a session that makes no request for this long (0: never)")
	return cmd
}

// newMCPServer builds the server the way `baton mcp` runs it; edge
// carries what depends on how it is reached: the network's rules to
// delivery changes over --http, the client's environment over stdio.
func (f *Factory) newMCPServer(o mcpOptions, edge mcp.Options) (*mcp.Server, error) {
	// A directory that is neither in a repository nor holds a store is no
	// project: the server does not create stores in random directories.
	root, how := f.projectRoot()
	switch how {
	case "override":
		if err := f.checkExplicitRoot(); err != nil {
			return nil, err
		}
	case fsstore.FoundWorkDir:
		root = ""
	}
	opts := mcp.Options{Version: f.Version, WorkDir: f.WorkDir, Root: root, Now: f.Now, GitHub: f.GitHub, Tools: o.tools,
		ReadOnly: edge.ReadOnly, Repo: edge.Repo, ClientEnv: edge.ClientEnv}
	if f.Deliveries != nil && f.DeliveriesConfigured != nil && f.DeliveriesConfigured(o.db) {
		opts.Deliveries = func(ctx context.Context) (*delivery.Service, error) {
			return f.openDeliveries(ctx, DeliveriesOptions{DB: o.db})
		}
	}
	s, err := mcp.New(opts)
	if err != nil {
		return nil, &ExitCodeError{Code: ExitUsage, Err: err}
	}
	return s, nil
}

func runMCP(ctx context.Context, f *Factory, o mcpOptions) error {
	if o.httpAddr == "" {
		if len(o.repos) > 0 {
			return usageError("--repo limits what delivery_create takes over --http; on stdio the client that started baton acts as you")
		}
		// A child of the client: its environment is the client's.
		s, err := f.newMCPServer(o, mcp.Options{ClientEnv: f.env})
		if err != nil {
			return err
		}
		defer s.Close()
		err = s.Run(ctx, &mcp.LineTransport{In: f.IO.In, Out: f.IO.Out})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	repos, err := serveRepos(ctx, f, o.repos)
	if err != nil {
		return err
	}
	if f.ServeHTTP == nil {
		return baton.Errorf(baton.Internal, "this baton was built without an HTTP server")
	}
	var s *mcp.Server
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	build := func(hasToken bool) (http.Handler, error) {
		remote := mcp.Options{Repo: func(path string) (string, error) { return delivery.AllowedRepo(repos, path) }}
		if !hasToken {
			remote.ReadOnly = "this server has no API token, so it changes no delivery: set BATON_API_TOKEN (or start `baton serve` once to generate one) and restart it"
		}
		var err error
		if s, err = f.newMCPServer(o, remote); err != nil {
			return nil, err
		}
		idle := o.sessionIdle
		if idle == 0 {
			idle = -1 // mcp.HTTPOptions' "never"
		}
		return s.HTTPHandler(mcp.HTTPOptions{SessionIdle: idle}), nil
	}
	listening := func(url string) {
		go s.Watch(ctx)
		fmt.Fprintf(f.IO.Err, "baton mcp: serving %s/\n", url)
	}
	return f.ServeHTTP(ctx, o.httpAddr, slog.New(newLogHandler(f.IO.Err)), build, listening)
}
