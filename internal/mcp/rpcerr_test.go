package mcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

// A prompt or resource that cannot be served answers with the JSON-RPC
// code the MCP specification asks for, never 0: -32602 when the request
// names something wrong or missing, -32603 when baton fails.
func TestPromptAndResourceErrorCodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.gh.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash"})
	f.gh.Fail("GET /repos/octo/app/issues/7", githubtest.ServerError())
	packets := filepath.Join(f.dir, ".agent/context/packets")
	if err := os.MkdirAll(packets, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(packets, "20261125T120002Z-huge.md"), make([]byte, maxResourceBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	code := func(err error) int64 {
		var w *jsonrpc.Error
		if !errors.As(err, &w) {
			return 0
		}
		return w.Code
	}
	for _, tt := range []struct {
		name string
		call func() error
		want int64
	}{
		{"prompts/get pickup of an unknown packet", func() error {
			_, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "pickup", Arguments: map[string]string{"packet": "nosuch"}})
			return err
		}, jsonrpc.CodeInvalidParams},
		{"prompts/get pickup with no packets", func() error {
			_, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "pickup"})
			return err
		}, jsonrpc.CodeInvalidParams},
		{"prompts/get review-pr without pr", func() error {
			_, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review-pr"})
			return err
		}, jsonrpc.CodeInvalidParams},
		{"prompts/get fix-issue while GitHub fails", func() error {
			_, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "fix-issue", Arguments: map[string]string{"issue": "https://github.com/octo/app/issues/7"}})
			return err
		}, jsonrpc.CodeInternalError},
		{"resources/read of a packet over the resource limit", func() error {
			_, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://packets/20261125T120002Z-huge"})
			return err
		}, jsonrpc.CodeInternalError},
		{"resources/read of an unknown packet", func() error {
			_, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://packets/nosuch"})
			return err
		}, sdk.CodeResourceNotFound},
	} {
		if err := tt.call(); code(err) != tt.want {
			t.Errorf("%s: error %v has code %d, want %d", tt.name, err, code(err), tt.want)
		}
	}

	// Outside any project a resource read says so, as invalid params.
	_, cs := connect(t, Options{Version: "test", WorkDir: t.TempDir()}, nil)
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://packets/20261125T120002Z-x"}); code(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("resources/read outside a project: error %v has code %d, want %d", err, code(err), jsonrpc.CodeInvalidParams)
	}
}
