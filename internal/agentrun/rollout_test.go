package agentrun

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

const testThread = "01a224f9-ece7-7291-bd95-8848563ed102"

// writeRollout writes a rollout of testThread filed on day under home,
// and returns its path.
func writeRollout(t testing.TB, home string, day time.Time, body string) string {
	t.Helper()
	dir := filepath.Join(home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rollout-"+day.Format("2006-01-02T15-04-05")+"-"+testThread+".jsonl")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A rollout as Codex 0.171.0 writes it: a session_meta line (its base
// instructions make it long), then the turn's context with the model.
const rollout = `{"timestamp":"2026-11-29T01:44:48.649Z","ordinal":0,"type":"session_meta","payload":{"id":"` + testThread + `","originator":"codex_exec","cli_version":"0.171.0","model_provider":"fake"}}
{"timestamp":"2026-11-29T01:44:48.680Z","ordinal":5,"type":"turn_context","payload":{"cwd":"/w","approval_policy":"never","model":"gpt-5.5","summary":"none"}}
{"timestamp":"2026-11-29T01:44:48.680Z","ordinal":6,"type":"turn_context","payload":{"model":"later-model"}}
`

func TestCodexModel(t *testing.T) {
	t.Parallel()
	now := time.Now()
	longMeta := `{"type":"session_meta","payload":{"base_instructions":"` + strings.Repeat("x", maxRolloutLine+10) + `"}}` + "\n"
	tests := []struct {
		name   string
		thread string
		setup  func(t *testing.T, home string)
		want   string
	}{
		{"the first turn's model", testThread, func(t *testing.T, home string) { writeRollout(t, home, now, rollout) }, "gpt-5.5"},
		{"filed the day before (a run past midnight)", testThread, func(t *testing.T, home string) { writeRollout(t, home, now.Add(-time.Hour), rollout) }, "gpt-5.5"},
		{"after a line too long to hold", testThread, func(t *testing.T, home string) { writeRollout(t, home, now, longMeta+rollout) }, "gpt-5.5"},
		{"no turn context", testThread, func(t *testing.T, home string) {
			writeRollout(t, home, now, `{"type":"session_meta","payload":{}}`+"\n")
		}, ""},
		{"past the scanned bytes", testThread, func(t *testing.T, home string) {
			writeRollout(t, home, now, strings.Repeat(`{"type":"event_msg","payload":{"text":"`+strings.Repeat("y", 4000)+`"}}`+"\n", maxRolloutScan/4000+1)+rollout)
		}, ""},
		{"another thread's rollout", "01a224f9-0000-7291-bd95-8848563ed102", func(t *testing.T, home string) { writeRollout(t, home, now, rollout) }, ""},
		{"a thread id that is a glob", "*", func(t *testing.T, home string) { writeRollout(t, home, now, rollout) }, ""},
		{"a thread id that is a path", "../../x", func(t *testing.T, home string) { writeRollout(t, home, now, rollout) }, ""},
		{"a symlink the agent planted", testThread, func(t *testing.T, home string) {
			path := writeRollout(t, home, now, "")
			target := filepath.Join(t.TempDir(), "elsewhere.jsonl")
			if err := os.WriteFile(target, []byte(rollout), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(path)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"a FIFO the agent planted", testThread, func(t *testing.T, home string) {
			path := writeRollout(t, home, now, "")
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			tt.setup(t, home)
			if got := codexModel(home, tt.thread, now.Add(-time.Hour), now); got != tt.want {
				t.Errorf("codexModel(%q) = %q, want %q", tt.thread, got, tt.want)
			}
		})
	}
	if got := codexModel("relative/home", testThread, now, now); got != "" {
		t.Errorf("codexModel with a relative home = %q, want \"\"", got)
	}
}

// FuzzRolloutModel: whatever lines come before it (none of them a turn
// context), the first turn context's model is found.
func FuzzRolloutModel(f *testing.F) {
	f.Add([]byte(rollout), "gpt-5.5")
	f.Add([]byte("not json\n{\"type\":\"turn_context\"\n\x00\xff"), "o3")
	f.Add([]byte(`{"type":"session_meta","payload":{"model":"wrong"}}`), "gpt-5.4-codex")
	f.Fuzz(func(t *testing.T, junk []byte, model string) {
		junk = bytes.ReplaceAll(junk, []byte("turn_context"), nil)
		if model == "" || len(junk) > maxRolloutLine || !utf8.ValidString(model) {
			return
		}
		line, _ := json.Marshal(map[string]any{"type": "turn_context", "payload": map[string]any{"model": model}})
		home := t.TempDir()
		writeRollout(t, home, time.Now(), string(junk)+"\n"+string(line)+"\n")
		if got := codexModel(home, testThread, time.Now(), time.Now()); got != model {
			t.Fatalf("codexModel after %q = %q, want %q", junk, got, model)
		}
	})
}
