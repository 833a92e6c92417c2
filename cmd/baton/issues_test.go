package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// ghEnv is gitEnv without any GitHub configuration of the machine
// running the tests, plus extra: each test says which tokens, hosts and
// API URLs baton has.
func ghEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range gitEnv(home) {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GH_") || strings.HasPrefix(k, "GITHUB_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// One issue, however its URL is spelled, is one delivery from the CLI:
// the first create makes it, the six other spellings find it.
func TestCLIIssueSpellingsAreOneDelivery(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := ghEnv(home, "BATON_DATA_DIR="+t.TempDir())
	ids := map[string]bool{}
	created := 0
	for _, u := range []string{
		"https://github.com/octo/app/issues/7", "https://github.com/octo/app/issues/7/", "https://github.com/octo/app/issues/7?x=1",
		"https://github.com/octo/app/issues/7#issuecomment-1", "http://github.com/octo/app/issues/7", "https://github.com/octo/app/pull/7",
		"https://github.com/OCTO/APP/issues/7",
	} {
		var out struct {
			Created  bool `json:"created"`
			Delivery struct {
				ID   string `json:"id"`
				Refs []struct {
					URL string `json:"url"`
				} `json:"refs"`
			} `json:"delivery"`
		}
		b := batonRun(t, env, home, "delivery", "create", "--issue", u, "--summary", "Fix the crash", "--json")
		if err := json.Unmarshal([]byte(b), &out); err != nil {
			t.Fatalf("create %s: %v\n%s", u, err, b)
		}
		ids[out.Delivery.ID] = true
		if out.Created {
			created++
		}
		if len(out.Delivery.Refs) == 0 || out.Delivery.Refs[0].URL != "https://github.com/octo/app/issues/7" {
			t.Errorf("create %s: refs %+v, want the canonical issue URL", u, out.Delivery.Refs)
		}
	}
	if len(ids) != 1 || created != 1 {
		t.Errorf("seven spellings of one issue: %d deliveries, %d created; want 1 and 1", len(ids), created)
	}
}
