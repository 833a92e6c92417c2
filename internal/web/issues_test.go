package web_test

import (
	"encoding/json"
	"testing"

	"github.com/baton-agent/baton/internal/sqlstore"
)

// One issue is one delivery, however its URL is spelled.
func TestAPIIssueSpellingsAreOneDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	ids := map[string]bool{}
	created := 0
	for _, u := range []string{
		"https://github.com/octo/app/issues/7", "https://github.com/octo/app/issues/7/", "https://github.com/octo/app/issues/7?x=1",
		"https://github.com/octo/app/issues/7#issuecomment-1", "http://github.com/octo/app/issues/7", "https://github.com/octo/app/pull/7",
		"https://github.com/OCTO/APP/issues/7",
	} {
		var out struct {
			Created  bool         `json:"created"`
			Delivery deliveryJSON `json:"delivery"`
		}
		body, _ := json.Marshal(map[string]string{"issue_url": u, "summary": "Fix it"})
		if r := e.do("POST", "/api/deliveries", string(body), true, &out); r.StatusCode != 201 && r.StatusCode != 200 {
			t.Fatalf("create %s = %d", u, r.StatusCode)
		}
		ids[out.Delivery.ID] = true
		if out.Created {
			created++
		}
	}
	if len(ids) != 1 || created != 1 {
		t.Errorf("seven spellings of one issue: %d deliveries, %d created; want 1 and 1", len(ids), created)
	}
}
