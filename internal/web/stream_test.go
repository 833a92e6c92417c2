package web_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// The event stream of a closed delivery ends: read from the start it
// gives every event, the close last, and ends; a client that has seen
// the close is told with 204 not to reconnect. A stream open when the
// delivery closes ends after the close.
func TestClosedDeliveryStreamEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	d := e.create("Close me")
	open := func(after string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/deliveries/"+d.ID+"/events?after="+after, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	live := open("0") // open before the close
	if _, err := e.svc.Decide(t.Context(), d.ID, delivery.ActClose, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	for name, resp := range map[string]*http.Response{"open at the close": live, "opened after it": open("0")} {
		body, err := io.ReadAll(resp.Body) // ends, or the 20 s bound fails it
		resp.Body.Close()
		events := strings.Count(string(body), "\nevent: ")
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), "event: phase\ndata: {\"seq\":") ||
			!strings.Contains(string(body)[strings.LastIndex(string(body), "event: "):], `"phase":"close"`) {
			t.Errorf("the stream %s: %d, %v, %d events:\n%s\nwant every event, the close last, and its end", name, resp.StatusCode, err, events, body)
		}
	}
	last, err := e.svc.LastEvent(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	resp := open(strconv.FormatInt(last, 10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("a client that saw the close reconnects: %d, want 204 (stop)", resp.StatusCode)
	}
}
