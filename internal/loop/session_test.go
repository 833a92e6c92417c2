package loop

import (
	"context"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// The session a command belongs to, from the variables of the shells it
// runs in, with the session log breaking a tie between nested sessions.
func TestCurrentSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := fsstore.Open(t.TempDir(), fsstore.Options{})
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, r := range []baton.SessionRecord{
		{SessionID: "claude-1", Harness: baton.HarnessClaude, TranscriptPath: "/t/claude-1.jsonl", At: at},
		{SessionID: "codex-1", Harness: baton.HarnessCodex, TranscriptPath: "/t/rollout-codex-1.jsonl", At: at.Add(time.Minute)},
		// The outer Claude session compacts after the inner one started:
		// its first start still comes first.
		{SessionID: "claude-1", Harness: baton.HarnessClaude, Source: "compact", TranscriptPath: "/t/claude-1.jsonl", At: at.Add(2 * time.Minute)},
		{SessionID: "pi-1", Harness: baton.HarnessPi, TranscriptPath: "/t/pi-1.jsonl", At: at.Add(3 * time.Minute)},
	} {
		if err := st.AppendSession(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want Session
	}{
		{"outside any session", nil, Session{}},
		{"a codex shell", map[string]string{"CODEX_THREAD_ID": "codex-1"},
			Session{ID: "codex-1", Harness: baton.HarnessCodex, TranscriptPath: "/t/rollout-codex-1.jsonl", Var: "CODEX_THREAD_ID"}},
		{"a pi shell", map[string]string{"PI_SESSION_ID": "pi-1"},
			Session{ID: "pi-1", Harness: baton.HarnessPi, TranscriptPath: "/t/pi-1.jsonl", Var: "PI_SESSION_ID"}},
		{"a claude shell", map[string]string{"BATON_SESSION_ID": "claude-1", "BATON_HARNESS": "claude", "BATON_TRANSCRIPT_PATH": "/env/claude-1.jsonl", "CLAUDE_CODE_SESSION_ID": "claude-1"},
			Session{ID: "claude-1", Harness: baton.HarnessClaude, TranscriptPath: "/env/claude-1.jsonl", Var: "BATON_SESSION_ID"}},
		{"a claude shell without baton's env file", map[string]string{"CLAUDE_CODE_SESSION_ID": "claude-1"},
			Session{ID: "claude-1", Harness: baton.HarnessClaude, TranscriptPath: "/t/claude-1.jsonl", Var: "CLAUDE_CODE_SESSION_ID"}},
		{"codex run from claude's shell", map[string]string{"BATON_SESSION_ID": "claude-1", "BATON_HARNESS": "claude", "BATON_TRANSCRIPT_PATH": "/env/claude-1.jsonl", "CLAUDE_CODE_SESSION_ID": "claude-1", "CODEX_THREAD_ID": "codex-1"},
			Session{ID: "codex-1", Harness: baton.HarnessCodex, TranscriptPath: "/t/rollout-codex-1.jsonl", Var: "CODEX_THREAD_ID"}},
		{"pi run from codex's shell", map[string]string{"CODEX_THREAD_ID": "codex-1", "PI_SESSION_ID": "pi-1"},
			Session{ID: "pi-1", Harness: baton.HarnessPi, TranscriptPath: "/t/pi-1.jsonl", Var: "PI_SESSION_ID"}},
		{"a session whose hooks never ran here comes after one whose did", map[string]string{"CODEX_THREAD_ID": "codex-1", "PI_SESSION_ID": "pi-elsewhere"},
			Session{ID: "codex-1", Harness: baton.HarnessCodex, TranscriptPath: "/t/rollout-codex-1.jsonl", Var: "CODEX_THREAD_ID"}},
		{"none logged: the first named", map[string]string{"BATON_SESSION_ID": "d-9", "BATON_HARNESS": "droid", "CODEX_THREAD_ID": "t-9"},
			Session{ID: "d-9", Harness: baton.HarnessDroid, Var: "BATON_SESSION_ID"}},
	} {
		got := CurrentSession(st, func(k string) string { return tt.env[k] })
		if got != tt.want {
			t.Errorf("%s: CurrentSession(%v) = %+v, want %+v", tt.name, tt.env, got, tt.want)
		}
	}
}
