package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/web"
)

func newMCPCmd(f *Factory) *cobra.Command {
	var tools []string
	var httpAddr, db string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the context store, loops and briefs over MCP",
		Long: `Serve baton to any MCP client (Claude Code, Codex, Droid, Cursor, VS Code, Zed, ...)
over stdio, or the streamable HTTP transport with --http.

Tools: pickup, handoff, packets, files, files_add, loop_start, loop_status,
loop_cancel, review_pr_brief, fix_issue_brief, implement_feature_brief; and,
when a delivery database is configured (--db, BATON_DATABASE_URL, or an
existing <data dir>/baton.db), deliveries, delivery, delivery_create,
delivery_approve, delivery_reject, delivery_retry, delivery_cancel.

Resources: baton://packets/{id} and baton://loops/{id}, listed and announced
as they appear; baton://runner/tree while a goal-tree run exists;
baton://deliveries/{id} with a database. Prompts: pickup, handoff,
review-pr, fix-issue, implement-feature.

The project is found as the CLI finds it: --root or BATON_ROOT, else from the
working directory the client starts the server in, else from the first of
the client's roots inside a repository. Outside any project the server still
answers and every tool says how to point it at one.

On stdio a line that is not a JSON-RPC message is answered with a parse
error (-32700) and the session goes on. --http takes baton serve's API token
(BATON_API_TOKEN, else the token file serve keeps in the data directory):
without one it listens on loopback only; with one every request needs
"Authorization: Bearer <token>".

baton install claude|codex|droid registers this server for you.`,
		Example: `  baton mcp                                   # stdio, as a client starts it
  baton mcp --tools pickup,handoff,packets    # a smaller tool list
  baton mcp --http 127.0.0.1:7071`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCP(cmd.Context(), f, tools, httpAddr, db)
		},
	}
	cmd.Flags().StringSliceVar(&tools, "tools", nil, "serve only these `TOOLS` (comma-separated; default all)")
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	cmd.Flags().StringVar(&db, "db", "", "the delivery database, SQLite file or postgres:// URL (default: BATON_DATABASE_URL, else <data dir>/baton.db when it exists)")
	return cmd
}

// newMCPServer builds the server the way `baton mcp` runs it.
func (f *Factory) newMCPServer(tools []string, db string) (*mcp.Server, error) {
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
	opts := mcp.Options{Version: f.Version, WorkDir: f.WorkDir, Root: root, Now: f.Now, GitHub: f.GitHub, Tools: tools}
	if f.Deliveries != nil && f.DeliveriesConfigured != nil && f.DeliveriesConfigured(db) {
		opts.Deliveries = func(ctx context.Context) (*delivery.Service, error) {
			return f.openDeliveries(ctx, DeliveriesOptions{DB: db})
		}
	}
	s, err := mcp.New(opts)
	if err != nil {
		return nil, &ExitCodeError{Code: ExitUsage, Err: err}
	}
	return s, nil
}

func runMCP(ctx context.Context, f *Factory, tools []string, httpAddr, db string) error {
	s, err := f.newMCPServer(tools, db)
	if err != nil {
		return err
	}
	defer s.Close()
	if httpAddr == "" {
		err := s.Run(ctx, &mcp.LineTransport{In: f.IO.In, Out: f.IO.Out})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	token, err := f.mcpToken()
	if err != nil {
		return err
	}
	if token == "" && !web.IsLoopback(httpAddr) {
		return usageError("--http %s is not loopback and there is no API token: set BATON_API_TOKEN (or start `baton serve` once on loopback to generate one) so the server is not open to the network", httpAddr)
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return baton.WrapError(baton.Invalid, err, "--http %s", httpAddr)
	}
	// The SDK refuses a loopback request whose Host is not loopback (DNS
	// rebinding); cross-origin protection refuses what a web page could
	// send through the user's browser.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.SDK() },
		&sdk.StreamableHTTPOptions{CrossOriginProtection: http.NewCrossOriginProtection()})
	srv := &http.Server{Handler: requireToken(token, h), ReadHeaderTimeout: 10 * time.Second}
	go s.Watch(ctx)
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Fprintf(f.IO.Err, "baton mcp: serving http://%s/\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// mcpToken is the API token, by `baton serve`'s rules: BATON_API_TOKEN,
// else the token file serve generated in the data directory, else none.
func (f *Factory) mcpToken() (string, error) {
	if tok := strings.TrimSpace(f.env("BATON_API_TOKEN")); tok != "" {
		return tok, nil
	}
	if f.DataDir == nil {
		return "", nil
	}
	dir, err := f.DataDir()
	if err != nil {
		return "", nil // no data directory: no token file either
	}
	return web.LoadToken(dir)
}

// requireToken lets a request through only with the bearer token, when
// there is one.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
			http.Error(w, "baton mcp: this server needs Authorization: Bearer <BATON_API_TOKEN>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
