package mcp

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/testenv"
)

// storeWith writes n packets into a new repository's store.
func storeWith(t *testing.T, n int) (string, *fsstore.Store) {
	t.Helper()
	dir := repo(t)
	st := fsstore.Open(dir, fsstore.Options{})
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		p := &baton.Packet{Purpose: fmt.Sprintf("task %d", i), CreatedAt: t0.Add(time.Duration(i) * time.Minute), Preamble: "\n",
			Sections: []baton.Section{{Heading: baton.SectionIntent, Body: "\nwork\n"}}}
		if err := st.CreatePacket(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return dir, st
}

// A store of many packets is listed a page at a time, by resources/list
// (packets newest first, then loops) and by the packets tool, and every
// page follows from the cursor of the one before.
func TestListsArePaged(t *testing.T) {
	t.Parallel()
	dir, st := storeWith(t, PageSize+37)
	for i := range 70 {
		l := &baton.Loop{Prompt: fmt.Sprintf("loop %d", i), Iteration: 1, MaxIterations: 5, CompletionPromises: []string{"DONE"},
			CreatedAt: time.Date(2026, 11, 2, 0, i, 0, 0, time.UTC)}
		if err := st.CreateLoop(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	_, cs := connect(t, Options{Root: dir, WorkDir: dir}, nil)
	ctx := context.Background()

	var uris []string
	cursor, pages := "", 0
	for {
		res, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Resources) > PageSize {
			t.Fatalf("a page of %d resources; want at most %d", len(res.Resources), PageSize)
		}
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		pages++
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	want := PageSize + 37 + 70
	if len(uris) != want || pages != 3 || len(slices.Compact(slices.Sorted(slices.Values(uris)))) != want {
		t.Errorf("resources/list gave %d resources (%d distinct) in %d pages, want %d in 3", len(uris), len(slices.Compact(slices.Sorted(slices.Values(uris)))), pages, want)
	}
	if last := PageSize + 36; len(uris) == want && (uris[0] != packetURI+fmt.Sprintf("20261101T%02d%02d00Z-task-%d", last/60, last%60, last) || uris[PageSize+37] != loopURI+"20261102T010900Z-loop-69") {
		t.Errorf("resources/list order: first %s, first loop %s; want the newest packet, then the newest loop", uris[0], uris[PageSize+37])
	}
	if _, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: "x1"}); err == nil {
		t.Error("resources/list with a bad cursor gave no error")
	}

	var ids []string
	args := map[string]any{"limit": 50}
	for {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "packets", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("packets %v = %+v, %v", args, res, err)
		}
		out := res.StructuredContent.(map[string]any)
		for _, p := range out["packets"].([]any) {
			ids = append(ids, p.(map[string]any)["id"].(string))
		}
		next, _ := out["next_cursor"].(string)
		if next == "" {
			break
		}
		args = map[string]any{"limit": 50, "cursor": next}
	}
	if len(ids) != PageSize+37 || ids[0] != fmt.Sprintf("20261101T%02d%02d00Z-task-%d", (PageSize+36)/60, (PageSize+36)%60, PageSize+36) {
		t.Errorf("the packets tool listed %d packets, newest %v; want %d, newest first", len(ids), ids[:1], PageSize+37)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "packets", Arguments: map[string]any{"cursor": "nonsense"}})
	if err != nil || !res.IsError {
		t.Errorf("packets with a bad cursor = %+v, %v; want a tool error", res, err)
	}
}

// An idle server watching a store only stats it: it reads the store
// again when a packet appears, not on every tick.
func TestWatchReadsOnlyOnChange(t *testing.T) {
	t.Parallel()
	dir, st := storeWith(t, 5)
	changed := make(chan struct{}, 8)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	srv, cs := connect(t, Options{Root: dir, WorkDir: dir, Watch: 5 * time.Millisecond}, client)
	if _, err := cs.ListResources(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitTicks := func(n int64) {
		t.Helper()
		start := srv.ticks.Load()
		if !testenv.Until(20*time.Second, nil, func() bool { return srv.ticks.Load() >= start+n }) {
			t.Fatalf("after 20s, fewer than %d ticks of the watch", n)
		}
	}
	waitTicks(30) // past the clock-tick window of the last write
	syncs := srv.syncs.Load()
	waitTicks(40)
	if got := srv.syncs.Load() - syncs; got != 0 {
		t.Errorf("the idle watch read the store %d times in 40 ticks; want 0", got)
	}
	for len(changed) > 0 {
		<-changed // the first listing's own announcement
	}
	if err := st.CreatePacket(context.Background(), &baton.Packet{Purpose: "written elsewhere", Preamble: "\n",
		Sections: []baton.Section{{Heading: baton.SectionIntent, Body: "\nwork\n"}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/list_changed after a packet appeared")
	}
	if srv.syncs.Load() == syncs {
		t.Error("the store was not read after it changed")
	}
	list, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(list.Resources) != 6 {
		t.Errorf("resources after the change = %d, %v; want 6", len(list.Resources), err)
	}
}
