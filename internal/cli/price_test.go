package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

// A model baton has no price for is named where it matters: at the start
// of a loop given --max-cost (its tokens would cost $0, and the budget
// never bite), and in doctor, with the variable that prices it.
func TestUnpricedModelsAreNamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	r := e.ok("", "", "loop", "start", "--json", "--max-tokens", "100", "an earlier loop")
	var first struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &first); err != nil {
		t.Fatal(err)
	}
	// The loop ran on two models, one of them unpriced, as a stop records.
	if _, err := e.store().UpdateLoop(t.Context(), first.ID, func(l *baton.Loop) error {
		l.Spent = baton.Spend{Tokens: baton.Tokens{Input: 900}, CostUSD: 0.001, Unpriced: []string{"gpt-9-preview"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	r = e.ok("", "", "loop", "start", "--max-cost", "2", "a loop with a cost budget")
	if !strings.Contains(r.stderr, "--max-cost counts nothing for gpt-9-preview") || !strings.Contains(r.stderr, `BATON_MODEL_PRICES='{"gpt-9-preview"`) {
		t.Errorf("loop start --max-cost said nothing of the unpriced model:\n%s", r.stderr)
	}
	if r := e.ok("", "", "loop", "start", "--max-tokens", "5000", "a loop with a token budget"); strings.Contains(r.stderr, "gpt-9-preview") {
		t.Errorf("a loop without --max-cost was warned of prices:\n%s", r.stderr)
	}

	var rep struct {
		Unpriced []string `json:"unpriced_models"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(e.run("", "", "doctor", "--no-probe", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Unpriced) != 1 || rep.Unpriced[0] != "gpt-9-preview" || !strings.Contains(strings.Join(rep.Warnings, "\n"), "gpt-9-preview, which baton has no price for") {
		t.Errorf("doctor: unpriced_models = %q, warnings %q", rep.Unpriced, rep.Warnings)
	}

	// Priced through BATON_MODEL_PRICES, it is named nowhere.
	e.vars["BATON_MODEL_PRICES"] = `{"gpt-9": {"input": 1, "output": 2}}`
	if r := e.ok("", "", "loop", "start", "--max-cost", "2", "priced now"); strings.Contains(r.stderr, "gpt-9-preview") {
		t.Errorf("a model priced by BATON_MODEL_PRICES was warned of:\n%s", r.stderr)
	}
	if err := json.Unmarshal([]byte(e.run("", "", "doctor", "--no-probe", "--json").stdout), &rep); err != nil || len(rep.Unpriced) != 0 {
		t.Errorf("doctor with the model priced: unpriced_models = %q, %v", rep.Unpriced, err)
	}
}
