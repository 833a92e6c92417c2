package loop

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/safefile"
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

// PricesChecked is the day the vendors' list prices in DefaultPrices
// were last read; docs/hooks.md shows the table with each source.
const PricesChecked = "2026-11-29"

// anthropic and openai are the vendors' usual cache pricing: Anthropic
// bills a 5-minute cache write at 1.25 times input and a read at a
// tenth; OpenAI bills cached input at a tenth (a quarter for the o4
// and 4.1 families). Newer models that break the rule are spelled out.
func anthropic(in, out float64) Price {
	return Price{Input: in, Output: out, CacheRead: in / 10, CacheWrite: in * 1.25}
}

func openai(in, out, cached float64) Price { return Price{Input: in, Output: out, CacheRead: cached} }

// DefaultPrices are list prices of models in wide use, per million
// tokens, as read on PricesChecked. Sources: Anthropic's model pages and
// pricing page (platform.claude.com/docs: models/opus-5-5/overview,
// models/sonnet-5-5/overview, about-claude/pricing); for gpt-5.5, OpenAI's
// list price as Vercel's AI Gateway relays it (OpenAI's own page could
// not be read); OpenAI's model pages for the older GPT models. Claude
// Haiku 5.5 is left out: it is priced by prompt length, which a
// per-token table cannot express. docs/hooks.md shows the table.
// Prices change and new models appear: BATON_MODEL_PRICES replaces or
// adds entries, and a model with no price counts its tokens but not its
// cost (the loop says which models those are, and so does doctor).
var DefaultPrices = Prices{
	// Claude Code's default model, then the rest of Anthropic's line.
	"claude-opus-5-5":   {Input: 4, Output: 20, CacheRead: 0.2, CacheWrite: 5}, // a cache read is 0.05x input
	"claude-opus-5":     anthropic(5, 25),
	"claude-sonnet-5-5": {Input: 2, Output: 10, CacheRead: 0.2, CacheWrite: 2.5},
	"claude-sonnet-5":   anthropic(2, 10),
	"claude-fable-5-1":  {Input: 10, Output: 50, CacheRead: 0.25, CacheWrite: 12.5},
	"claude-fable-5":    anthropic(10, 50),
	"claude-opus-4":     anthropic(15, 75),
	"claude-opus-4-1":   anthropic(15, 75),
	"claude-opus-4-5":   anthropic(5, 25),
	"claude-opus-4-6":   anthropic(5, 25),
	"claude-opus-4-7":   anthropic(5, 25),
	"claude-opus-4-8":   anthropic(5, 25),
	"claude-sonnet-4":   anthropic(3, 15),
	"claude-sonnet-4-5": anthropic(3, 15),
	"claude-haiku-4-5":  anthropic(1, 5),
	"claude-3-7-sonnet": anthropic(3, 15),
	"claude-3-5-haiku":  anthropic(0.8, 4),
	// Codex's default model.
	"gpt-5.5":     openai(5, 30, 0.5),
	"gpt-5.5-pro": openai(30, 180, 0),
	"gpt-5":       openai(1.25, 10, 0.125),
	"gpt-5.1":     openai(1.25, 10, 0.125),
	"gpt-5-mini":  openai(0.25, 2, 0.025),
	"gpt-5-nano":  openai(0.05, 0.4, 0.005),
	"gpt-4.1":     openai(2, 8, 0.5),
	"o3":          openai(2, 8, 0.5),
	"o4-mini":     openai(1.1, 4.4, 0.275),
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
		if rest := m[len(pre):]; rest != "" && !strings.ContainsRune("-@:_[", rune(rest[0])) {
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

// Unpriced lists, sorted and once each, those of models ps has no price
// for.
func (ps Prices) Unpriced(models []string) []string {
	var out []string
	for _, m := range models {
		if _, ok := ps.Lookup(m); !ok && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// SeenUnpriced lists the models the store's loops spent tokens on with no
// price, and that ps still has none for (BATON_MODEL_PRICES may have
// priced one since), sorted. Loops that cannot be read are skipped.
func SeenUnpriced(st *fsstore.Store, ps Prices) ([]string, error) {
	ls, _, err := st.FindLoops(fsstore.LoopFilter{})
	if err != nil {
		return nil, err
	}
	var seen []string
	for _, l := range ls {
		seen = append(seen, l.Spent.Unpriced...)
	}
	return ps.Unpriced(seen), nil
}
