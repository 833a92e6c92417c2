package loop

import (
	"encoding/json"
	"fmt"
	"github.com/baton-agent/baton/internal/safefile"
	"io"
	"sort"
	"strings"

	"github.com/baton-agent/baton"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// Cost is what t costs at p.
func (p Price) Cost(t baton.Tokens) float64 {
	return (float64(t.Input)*p.Input + float64(t.Output)*p.Output +
		float64(t.CacheRead)*p.CacheRead + float64(t.CacheWrite)*p.CacheWrite) / 1e6
}

// Prices maps a model name prefix to its price. A model takes the price
// of the longest prefix it starts with that ends where a word of its name
// does ("gpt-5" prices gpt-5-codex, not gpt-5.5).
type Prices map[string]Price

// anthropic and openai are the vendors' usual cache pricing: Anthropic
// bills a 5-minute cache write at 1.25 times input and a read at a
// tenth; OpenAI bills cached input at a tenth (a quarter for the o4
// and 4.1 families).
func anthropic(in, out float64) Price {
	return Price{Input: in, Output: out, CacheRead: in / 10, CacheWrite: in * 1.25}
}

func openai(in, out, cached float64) Price { return Price{Input: in, Output: out, CacheRead: cached} }

// DefaultPrices are list prices of models in wide use, per million
// tokens. Prices change and new models appear: BATON_MODEL_PRICES
// replaces or adds entries, and a model with no price counts its tokens
// but not its cost (the loop says which models those are).
var DefaultPrices = Prices{
	"claude-opus-4":     anthropic(15, 75),
	"claude-opus-4-1":   anthropic(15, 75),
	"claude-opus-4-5":   anthropic(5, 25),
	"claude-sonnet-4":   anthropic(3, 15),
	"claude-sonnet-4-5": anthropic(3, 15),
	"claude-haiku-4-5":  anthropic(1, 5),
	"claude-3-7-sonnet": anthropic(3, 15),
	"claude-3-5-haiku":  anthropic(0.8, 4),
	"gpt-5":             openai(1.25, 10, 0.125),
	"gpt-5.1":           openai(1.25, 10, 0.125),
	"gpt-5-mini":        openai(0.25, 2, 0.025),
	"gpt-5-nano":        openai(0.05, 0.4, 0.005),
	"gpt-4.1":           openai(2, 8, 0.5),
	"o3":                openai(2, 8, 0.5),
	"o4-mini":           openai(1.1, 4.4, 0.275),
}

// Lookup returns the price of model.
func (ps Prices) Lookup(model string) (Price, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // provider/model
	}
	best, price, found := -1, Price{}, false
	for prefix, p := range ps {
		pre := strings.ToLower(prefix)
		if !strings.HasPrefix(m, pre) || len(pre) <= best {
			continue
		}
		if rest := m[len(pre):]; rest != "" && !strings.ContainsRune("-@:_", rune(rest[0])) {
			continue // gpt-5 is not gpt-5.5
		}
		best, price, found = len(pre), p, true
	}
	return price, found
}

// maxPricesFile bounds a prices file.
const maxPricesFile = 64 << 10

// PricesFromEnv is DefaultPrices with BATON_MODEL_PRICES applied: a JSON
// object {"model prefix": {"input": …, "output": …, "cache_read": …,
// "cache_write": …}} (US dollars per million tokens), or the path of a
// file holding one.
func PricesFromEnv(getenv func(string) string) (Prices, error) {
	ps := Prices{}
	for k, v := range DefaultPrices {
		ps[k] = v
	}
	v := ""
	if getenv != nil {
		v = strings.TrimSpace(getenv("BATON_MODEL_PRICES"))
	}
	if v == "" {
		return ps, nil
	}
	data := []byte(v)
	if !strings.HasPrefix(v, "{") {
		f, err := safefile.OpenRegularFollow(v) // never blocks on a FIFO in the Stop hook
		if err != nil {
			return ps, fmt.Errorf("BATON_MODEL_PRICES: %w", err)
		}
		data, err = io.ReadAll(io.LimitReader(f, maxPricesFile+1))
		f.Close()
		if err != nil {
			return ps, fmt.Errorf("BATON_MODEL_PRICES: %w", err)
		}
		if len(data) > maxPricesFile {
			return ps, fmt.Errorf("BATON_MODEL_PRICES: %s is over %d KiB", v, maxPricesFile>>10)
		}
	}
	var extra Prices
	if err := json.Unmarshal(data, &extra); err != nil {
		return ps, fmt.Errorf("BATON_MODEL_PRICES is not a JSON object of prices per million tokens ({\"model\": {\"input\": 3, \"output\": 15}}): %w", err)
	}
	for k, p := range extra {
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			return ps, fmt.Errorf("BATON_MODEL_PRICES: the price of %q is negative", k)
		}
		ps[k] = p
	}
	return ps, nil
}

// Price turns tokens per model, and the cost a harness recorded itself
// per model, into a Spend: a recorded cost wins, else the model's price;
// a model with neither is listed as unpriced.
func (ps Prices) Price(byModel map[string]baton.Tokens, recorded map[string]float64) baton.Spend {
	var s baton.Spend
	models := make([]string, 0, len(byModel))
	for m := range byModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		t := byModel[m]
		s.Tokens = s.Tokens.Add(t)
		if c, ok := recorded[m]; ok {
			s.CostUSD += c
			continue
		}
		if p, ok := ps.Lookup(m); ok {
			s.CostUSD += p.Cost(t)
			continue
		}
		if t.Total() > 0 {
			name := m
			if name == "" {
				name = "(unnamed model)"
			}
			s.Unpriced = append(s.Unpriced, name)
		}
	}
	return s
}
