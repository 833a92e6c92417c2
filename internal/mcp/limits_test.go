package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A handoff too large to read back is refused with the reason, not
// reported written; a packet pickup passes over (here the newest, left
// with a merge's conflict markers) is named in the result.
func TestPacketsTooLargeOrUnreadableAreSaid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mustCall := func(name string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		text, res := f.call(name, args)
		if res.IsError {
			t.Fatalf("%s:\n%s", name, text)
		}
		return res
	}
	older := mustCall("handoff", map[string]any{"purpose": "the older packet"}).StructuredContent.(map[string]any)["id"].(string)

	text, res := f.call("handoff", map[string]any{"purpose": "too much", "body": "## Notes\n\n" + strings.Repeat("log line\n", 600_000)})
	if !res.IsError || !strings.Contains(text, "over the 4.0 MiB limit") || !strings.Contains(text, "shorten it") {
		t.Errorf("a 5 MiB handoff:\n%.600s", text)
	}
	if _, res := f.call("packets", map[string]any{}); len(res.StructuredContent.(map[string]any)["packets"].([]any)) != 1 || res.StructuredContent.(map[string]any)["skipped"] != nil {
		t.Errorf("a refused handoff was written: %v", res.StructuredContent)
	}

	newer := mustCall("handoff", map[string]any{"purpose": "the newer packet"}).StructuredContent.(map[string]any)
	path := newer["path"].(string)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	conflicted := strings.Replace(string(b), "status: draft\n", "<<<<<<< HEAD\nstatus: draft\n=======\nstatus: active\n>>>>>>> other\n", 1)
	if err := os.WriteFile(path, []byte(conflicted), 0o644); err != nil {
		t.Fatal(err)
	}
	res = mustCall("pickup", map[string]any{})
	out := res.StructuredContent.(map[string]any)
	skipped, _ := out["skipped"].([]any)
	if out["packet_id"] != older || len(skipped) != 1 || !strings.Contains(skipped[0].(string), filepath.Base(path)) {
		t.Errorf("pickup past a conflicted newest packet = %v", out)
	}
	if len(res.Content) != 2 || !strings.Contains(res.Content[1].(*sdk.TextContent).Text, "skipped 1 packet(s) that cannot be read") ||
		!strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "# Pickup: the older packet") {
		t.Errorf("pickup content does not say what it skipped: %+v", res.Content)
	}
	pr, err := f.cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "pickup"})
	if err != nil || !strings.Contains(pr.Description, filepath.Base(path)) {
		t.Errorf("the pickup prompt does not say what it skipped: %v, %v", pr, err)
	}
}
