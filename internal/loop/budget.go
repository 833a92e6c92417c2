package loop

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// OverBudget says, in one line, which of l's budgets is spent at now, or
// "" when none is: its tokens, its cost, or its active time.
func OverBudget(l *baton.Loop, now time.Time) string {
	if l.MaxTokens > 0 && l.Spent.Total() >= l.MaxTokens {
		return fmt.Sprintf("its token budget is spent (%d of %d tokens); raise it with `baton loop resume %s --max-tokens N`", l.Spent.Total(), l.MaxTokens, l.ID)
	}
	if l.MaxCostUSD > 0 && l.Spent.CostUSD >= l.MaxCostUSD {
		return fmt.Sprintf("its cost budget is spent ($%.2f of $%.2f); raise it with `baton loop resume %s --max-cost USD`", l.Spent.CostUSD, l.MaxCostUSD, l.ID)
	}
	if l.MaxDuration > 0 && !now.IsZero() {
		if d := l.ActiveTime(now); d >= l.MaxDuration {
			return fmt.Sprintf("its time budget is spent (active %s of %s); raise it with `baton loop resume %s --max-duration D`", d.Round(time.Second), l.MaxDuration, l.ID)
		}
	}
	return ""
}

// AddSpend returns a plus b, the unpriced models of both listed once.
func AddSpend(a, b baton.Spend) baton.Spend {
	out := baton.Spend{Tokens: a.Tokens.Add(b.Tokens), CostUSD: a.CostUSD + b.CostUSD}
	for _, m := range append(slices.Clone(a.Unpriced), b.Unpriced...) {
		if !slices.Contains(out.Unpriced, m) {
			out.Unpriced = append(out.Unpriced, m)
		}
	}
	return out
}

// cursorEqual reports whether two usage cursors are the same place.
func cursorEqual(a, b baton.UsageCursor) bool {
	if (a.Totals == nil) != (b.Totals == nil) || a.Totals != nil && *a.Totals != *b.Totals {
		return false
	}
	return a.Path == b.Path && a.Offset == b.Offset && a.SkipLine == b.SkipLine && a.Since.Equal(b.Since) && a.LastID == b.LastID && a.Model == b.Model
}

// SpendLine is what a loop spent, in one line, with its budgets.
func SpendLine(l *baton.Loop, now time.Time) string {
	var parts []string
	tok := fmt.Sprintf("%d tokens", l.Spent.Total())
	if l.MaxTokens > 0 {
		tok += fmt.Sprintf(" of %d", l.MaxTokens)
	}
	parts = append(parts, tok)
	cost := fmt.Sprintf("$%.2f", l.Spent.CostUSD)
	if l.MaxCostUSD > 0 {
		cost += fmt.Sprintf(" of $%.2f", l.MaxCostUSD)
	}
	if len(l.Spent.Unpriced) > 0 {
		cost += " (without " + strings.Join(l.Spent.Unpriced, ", ") + ", which have no price)"
	}
	parts = append(parts, cost)
	act := "active " + l.ActiveTime(now).Round(time.Second).String()
	if l.MaxDuration > 0 {
		act += " of " + l.MaxDuration.String()
	}
	parts = append(parts, act)
	return strings.Join(parts, ", ")
}

// Budgets says in words what makes l pause ("" when it has no budget):
// "50000 tokens, $2.50 or 1h30m0s active".
func Budgets(l *baton.Loop) string {
	var parts []string
	if l.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", l.MaxTokens))
	}
	if l.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", l.MaxCostUSD))
	}
	if l.MaxDuration > 0 {
		parts = append(parts, l.MaxDuration.String()+" active")
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
