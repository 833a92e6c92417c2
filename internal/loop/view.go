package loop

import (
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// View is a loop as every edge shows it: `baton loop ... --json`, the MCP
// loop tools' structured output and the dashboard's project page. Times
// are RFC 3339 in UTC, durations seconds, and lists are never null.
type View struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	// Status is active, paused, done or cancelled; Foreground says a
	// session's Stop (or the next session's, when unbound) continues it.
	Status     string `json:"status"`
	Foreground bool   `json:"foreground"`
	// Iteration is the round under way, the first being 1; MaxIterations
	// 0 means no limit.
	Iteration          int      `json:"iteration"`
	MaxIterations      int      `json:"max_iterations"`
	CompletionPromises []string `json:"completion_promises"`
	SessionID          string   `json:"session_id,omitempty"`
	SourcePacketID     string   `json:"source_packet_id,omitempty"`
	// Outcome is the promise (or "cancelled", "max_iterations") that
	// ended it; PauseReason why it is paused.
	Outcome           string `json:"outcome,omitempty"`
	PauseReason       string `json:"pause_reason,omitempty"`
	ConsecutiveBlocks int    `json:"consecutive_blocks"`
	CompactedPacket   string `json:"compacted_packet,omitempty"`
	// Foreign is set for a loop that has not ended and that this machine
	// does not trust as it is: it came with the repository, or a checkout
	// changed its prompt or verify commands since it was adopted. It runs
	// nowhere until a person adopts it (`baton loop adopt`).
	Foreign bool `json:"foreign"`
	// Verify are the commands a promise must pass; VerifyRuns each
	// verification's result, oldest first.
	Verify               []string          `json:"verify"`
	VerifyTimeoutSeconds float64           `json:"verify_timeout_seconds"`
	VerifyRuns           []baton.VerifyRun `json:"verify_runs"`
	// Budgets (0: none) and what the loop's session spent.
	MaxTokens          int64       `json:"max_tokens"`
	MaxCostUSD         float64     `json:"max_cost_usd"`
	MaxDurationSeconds float64     `json:"max_duration_seconds"`
	Spent              baton.Spend `json:"spent"`
	SpentTokens        int64       `json:"spent_tokens"`
	ActiveSeconds      float64     `json:"active_seconds"`
	// StallRounds is how many rounds in a row without progress pause the
	// loop; RoundsWithoutProgress how many it has made so far.
	StallRounds           int    `json:"stall_rounds"`
	RoundsWithoutProgress int    `json:"rounds_without_progress"`
	CreatedAt             string `json:"created_at"`
	UpdatedAt             string `json:"updated_at"`
	// Prompt is the loop's prompt; lists leave it out (NewListItem).
	Prompt string `json:"prompt,omitempty"`
}

// NewView is l as shown at now, prompt included: path is its file, fg the
// store's foreground loops (Store.Foreground; the zero value marks none).
func NewView(l *baton.Loop, path string, fg fsstore.Foreground, now time.Time) View {
	v := NewListItem(l, path, fg, now)
	v.Prompt = l.Prompt
	return v
}

// NewListItem is NewView without the prompt, for lists and for answers
// that follow a change (start, cancel), where the prompt is known.
func NewListItem(l *baton.Loop, path string, fg fsstore.Foreground, now time.Time) View {
	v := View{
		ID: l.ID, Path: path, Status: string(l.Status), Foreground: fg.Has(l.ID),
		Iteration: l.Iteration, MaxIterations: l.MaxIterations, CompletionPromises: nonNil(l.CompletionPromises),
		SessionID: l.SessionID, SourcePacketID: l.SourcePacketID, Outcome: l.Outcome, PauseReason: l.PauseReason,
		ConsecutiveBlocks: l.ConsecutiveBlocks, CompactedPacket: l.CompactedPacket, Foreign: !l.Status.Ended() && !fg.Trusts(l),
		Verify: nonNil(l.Verify), VerifyTimeoutSeconds: l.EffectiveVerifyTimeout().Seconds(), VerifyRuns: l.VerifyRuns,
		MaxTokens: l.MaxTokens, MaxCostUSD: l.MaxCostUSD, MaxDurationSeconds: l.MaxDuration.Seconds(),
		Spent: l.Spent, SpentTokens: l.Spent.Total(), ActiveSeconds: l.ActiveTime(now).Round(time.Second).Seconds(),
		StallRounds: baton.EffectiveStallRounds(l.StallRounds), RoundsWithoutProgress: l.Stall.Rounds,
		CreatedAt: baton.FormatTime(l.CreatedAt), UpdatedAt: baton.FormatTime(l.UpdatedAt),
	}
	if v.VerifyRuns == nil {
		v.VerifyRuns = []baton.VerifyRun{}
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Views are the loops of the store that filter keeps, as every edge
// lists them: most recently updated first, each read whole (budgets,
// spend, verify runs), without prompts, marked by fg (Store.Foreground).
// warnings name the loop files that could not be read.
func Views(st *fsstore.Store, filter fsstore.LoopFilter, fg fsstore.Foreground, now time.Time) (views []View, warnings []error, err error) {
	ls, warnings, err := st.FindLoops(filter)
	if err != nil {
		return nil, nil, err
	}
	views = make([]View, 0, len(ls))
	for _, l := range ls {
		path, _ := st.LoopPath(l.ID)
		views = append(views, NewListItem(l, path, fg, now))
	}
	return views, warnings, nil
}
