package loop

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton"
)

func TestPriceLookup(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]float64{
		"claude-sonnet-4-5-20250929": 3, // a dated snapshot of a priced family
		"claude-opus-4-5":            5, // not claude-opus-4's price
		"claude-opus-4-20250514":     15,
		"anthropic/claude-haiku-4-5": 1, // provider/model
		"gpt-5-codex":                1.25,
		"gpt-5-mini-2025-08-07":      0.25,
		"gpt-5.5":                    5, // not gpt-5's price
		"gpt-5.5-2026-04-23":         5,
		"gpt-5.4":                    -1,
		"claude-opus-5-5":            4,  // Claude Code's default
		"claude-opus-5-5[1m]":        4,  // Claude Code's 1M-context name
		"claude-opus-4-8":            5,  // not claude-opus-4's
		"claude-haiku-5-5":           -1, // priced by prompt length
		"custom:scripted-0":          -1,
		"":                           -1,
	} {
		p, ok := DefaultPrices.Lookup(model)
		if got := map[bool]float64{true: p.Input, false: -1}[ok]; got != want {
			t.Errorf("Lookup(%q) input price = %v (found %v), want %v", model, p.Input, ok, want)
		}
	}
}

// Tokens at a price, a cost the harness recorded, and a model with no
// price: each counts its tokens, and only the priced ones their cost.
func TestPriceSpend(t *testing.T) {
	t.Parallel()
	ps, err := PricesFromEnv(func(string) string { return `{"claude-opus-5-5": {"input": 4, "output": 20}}` })
	if err != nil {
		t.Fatal(err)
	}
	s := ps.Price(map[string]baton.Tokens{
		"claude-opus-5-5":   {Input: 30, Output: 15},
		"claude-sonnet-4-5": {Input: 1000, CacheRead: 10000, CacheWrite: 2000, Output: 500},
		"scripted":          {Input: 320, Output: 55},
		"mystery":           {Input: 7},
	}, map[string]float64{"scripted": 0.0168})
	want := 30*4e-6 + 15*20e-6 + // BATON_MODEL_PRICES
		1000*3e-6 + 10000*0.3e-6 + 2000*3.75e-6 + 500*15e-6 + // the default table
		0.0168 // recorded by the harness
	if math.Abs(s.CostUSD-want) > 1e-12 || s.Total() != 45+13500+375+7 || len(s.Unpriced) != 1 || s.Unpriced[0] != "mystery" {
		t.Errorf("Price() = %+v, want cost %v, 13927 tokens, unpriced [mystery]", s, want)
	}
	file := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(file, []byte(`{"mystery": {"input": 1}}`), 0o644)
	if ps, err := PricesFromEnv(func(string) string { return file }); err != nil || ps["mystery"].Input != 1 || ps["gpt-5"].Input != 1.25 {
		t.Errorf("PricesFromEnv(file) = %v, %v", ps["mystery"], err)
	}
	for _, bad := range []string{`{"x": {"input": -1}}`, `[1]`, filepath.Join(t.TempDir(), "missing.json")} {
		if _, err := PricesFromEnv(func(string) string { return bad }); err == nil {
			t.Errorf("PricesFromEnv(%s): no error", bad)
		}
	}
}
