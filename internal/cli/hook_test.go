package cli

import (
	"github.com/baton-agent/baton/internal/golden"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/loop"
)

// Sessions of the payloads under testdata/hooks.
var hookSessions = map[string]string{
	"claude": "5b1c0a2e-1111-4222-8333-944445555666",
	"codex":  "019a-codex-thread",
	"droid":  "d-4711",
	"pi":     "pi-session-1",
}

// loopPrompt holds a line that is exactly "---" and a heading, which a
// frontmatter parser must not eat.
const loopPrompt = "Make go test ./... pass.\n---\n## One failure per round\nRun the tests after each fix.\n"

// payload reads testdata/hooks/<harness>/<name>.json with $ROOT replaced.
func (e *env) payload(harness, name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hooks", harness, name+".json"))
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "$ROOT", e.dir)
}

// hook runs `baton hook <event> --harness <harness>` with a payload.
func (e *env) hook(harness, event, payload string) result {
	e.t.Helper()
	return e.run("", payload, "hook", event, "--harness", harness)
}

func (e *env) store() *fsstore.Store {
	return fsstore.Open(e.dir, fsstore.Options{Now: func() time.Time { return e.now }})
}

// project makes a repository with an active packet, a foreground loop
// bound to session, and files touched since the packet.
func (e *env) project(session string) (packetID, loopID string) {
	e.t.Helper()
	e.gitRepo()
	r := e.ok("", "", "handoff", "finish the JWT refactor", "--next-prompt", "Run go test ./internal/auth/... and fix the expiry tests")
	packetID = strings.TrimSpace(r.stdout)
	e.ok("", "", "packet", "activate", packetID)
	e.vars["BATON_SESSION_ID"] = session
	e.ok("", loopPrompt, "loop", "start", "--promise", "DONE", "--promise", "BLOCKED", "--max-iterations", "5", "--prompt-file", "-")
	delete(e.vars, "BATON_SESSION_ID")
	loopID = e.foreground()
	if err := e.store().AppendRelevantFiles(e.t.Context(),
		baton.RelevantFile{Timestamp: e.now, FilePath: "internal/auth/jwt.go", Source: baton.FromTool, Confidence: 0.5},
		baton.RelevantFile{Timestamp: e.now, FilePath: "README.md", Source: baton.FromTool, Confidence: 0.5},
	); err != nil {
		e.t.Fatal(err)
	}
	return packetID, loopID
}

func (e *env) foreground() string {
	e.t.Helper()
	id, err := loop.Foreground(e.store(), "")
	if errors.Is(err, loop.ErrNoForeground) {
		return ""
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *env) loop(id string) *baton.Loop {
	e.t.Helper()
	l, err := e.store().FindLoopByID(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func (e *env) relevantFiles() []string {
	e.t.Helper()
	var out []string
	if _, err := e.store().ScanRelevantFiles(func(r baton.RelevantFile) error {
		if r.Source == baton.FromTool {
			out = append(out, r.FilePath)
		}
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// writeTranscript writes a transcript under $ROOT/.transcripts.
func (e *env) writeTranscript(name string, lines ...string) {
	e.t.Helper()
	e.write(filepath.Join(".transcripts", name), strings.Join(lines, "\n")+"\n")
}

func claudeLine(msgID string, blocks ...string) string {
	return `{"type":"assistant","isSidechain":false,"message":{"id":"` + msgID + `","role":"assistant","content":[` + strings.Join(blocks, ",") + `]}}`
}

func textBlock(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(b) + `}`
}

const toolUseBlock = `{"type":"tool_use","id":"toolu_9","name":"Edit","input":{"file_path":"x.go"}}`

// TestHookContracts runs real-shaped payloads of every harness through
// baton hook and compares stdout with goldens (testdata/hooks/<harness>/
// <case>.golden); each case also checks what changed in the store.
func TestHookContracts(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, e *env, packetID, loopID string)
	tests := []struct {
		harness, event, payload string
		before                  func(e *env, loopID string)
		check                   check
	}{
		{"claude", "session-start", "session-start", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.read(e.indexPath("sessions.jsonl")); !strings.Contains(got, `"session_id":"5b1c0a2e-1111-4222-8333-944445555666","harness":"claude","source":"startup","cwd":"`+e.dir+`/internal/auth"`) {
				t.Errorf("sessions.jsonl = %s", got)
			}
			if got, want := e.read("claude.env"), "export BATON_SESSION_ID=5b1c0a2e-1111-4222-8333-944445555666\nexport BATON_HARNESS=claude\nexport BATON_TRANSCRIPT_PATH="+e.dir+"/.transcripts/5b1c.jsonl\n"; got != want {
				t.Errorf("CLAUDE_ENV_FILE = %q, want %q", got, want)
			}
		}},
		{"claude", "session-start", "session-start-compact", func(e *env, _ string) {
			e.ok("", "", "hook", "pre-compact", "--harness", "claude") // empty stdin: fails open, writes nothing
			e.hook("claude", "pre-compact", e.payload("claude", "pre-compact"))
		}, nil},
		// A packet newer than the one saved at compaction is restated, and
		// the saved one named.
		{"claude", "session-start", "session-start-compact-newer", func(e *env, _ string) {
			e.hook("claude", "pre-compact", e.payload("claude", "pre-compact"))
			e.now = e.now.Add(time.Minute)
			e.ok("", "", "handoff", "ship the JWT refactor", "--next-prompt", "Open the pull request")
		}, nil},
		{"claude", "stop", "stop", nil, func(t *testing.T, e *env, _, loopID string) {
			if l := e.loop(loopID); l.Iteration != 2 || l.ConsecutiveBlocks != 1 || l.Status != baton.LoopActive {
				t.Errorf("loop after a continued stop = iteration %d, blocks %d, %s", l.Iteration, l.ConsecutiveBlocks, l.Status)
			}
		}},
		{"claude", "stop", "stop-promise", nil, func(t *testing.T, e *env, _, loopID string) {
			if l := e.loop(loopID); l.Status != baton.LoopDone || l.Outcome != "DONE" || l.Iteration != 1 {
				t.Errorf("loop after the promise = %s, outcome %q, iteration %d", l.Status, l.Outcome, l.Iteration)
			}
			if fg := e.foreground(); fg != "" {
				t.Errorf("foreground after done = %q, want none", fg)
			}
		}},
		{"claude", "post-tool-use", "post-tool-use-write", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.relevantFiles(); strings.Join(got, ",") != "internal/auth/jwt.go,README.md,internal/auth/jwt.go" {
				t.Errorf("relevant files = %q", got)
			}
		}},
		{"claude", "post-tool-use", "post-tool-use-bash", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.relevantFiles(); len(got) != 2 {
				t.Errorf("a Bash call recorded files: %q", got)
			}
		}},
		{"claude", "pre-compact", "pre-compact", func(e *env, _ string) {
			e.writeTranscript("5b1c.jsonl", claudeLine("msg_1", textBlock("The expiry check compares seconds with milliseconds.")), claudeLine("msg_1", toolUseBlock))
		}, func(t *testing.T, e *env, packetID, loopID string) {
			ps, _, err := e.store().FindPackets(fsstore.PacketFilter{})
			if err != nil || len(ps) != 2 {
				t.Fatalf("packets after pre-compact = %d, %v", len(ps), err)
			}
			auto := ps[0]
			if auto.ID == packetID {
				auto = ps[1]
			}
			if auto.Source != "claude" || auto.Status != baton.PacketDraft || !strings.HasPrefix(auto.Purpose, "Continue loop "+loopID) {
				t.Errorf("pre-compact packet = source %q status %q purpose %q", auto.Source, auto.Status, auto.Purpose)
			}
			if got := auto.SectionText(baton.SectionContext); !strings.Contains(got, "The expiry check compares seconds with milliseconds.") || !strings.Contains(got, "branch: `main`") {
				t.Errorf("pre-compact Context = %s", got)
			}
			if got := auto.SectionText(baton.SectionNextPrompt); !strings.Contains(got, "```\n"+strings.TrimSpace(loopPrompt)+"\n```") {
				t.Errorf("pre-compact Next Prompt = %q", got)
			}
			if l := e.loop(loopID); l.Status != baton.LoopActive || !strings.Contains(l.Notes, "compaction (auto)") {
				t.Errorf("loop after pre-compact = %s, notes %q", l.Status, l.Notes)
			}
		}},
		{"codex", "session-start", "session-start", nil, nil},
		{"codex", "stop", "stop", nil, func(t *testing.T, e *env, _, loopID string) {
			// last_assistant_message and transcript_path are null: the
			// message is unknown, and unknown means continue.
			if l := e.loop(loopID); l.Iteration != 2 || l.Status != baton.LoopActive {
				t.Errorf("loop = iteration %d, %s", l.Iteration, l.Status)
			}
		}},
		{"codex", "stop", "stop-promise", nil, func(t *testing.T, e *env, _, loopID string) {
			if l := e.loop(loopID); l.Status != baton.LoopDone || l.Outcome != "BLOCKED" {
				t.Errorf("loop = %s, outcome %q", l.Status, l.Outcome)
			}
		}},
		{"codex", "stop", "stop-rollout", func(e *env, _ string) {
			// last_assistant_message is null but the rollout ends in the
			// promise: the loop is finished, not blocked again.
			e.writeTranscript("rollout-019a.jsonl",
				`{"type":"session_meta","payload":{"id":"019a-codex-thread","cwd":"`+e.dir+`"}}`,
				`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}`,
				`{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done.\n<promise>DONE</promise>"}]}}`,
				`{"type":"event_msg","payload":{"type":"token_count","info":null}}`)
		}, func(t *testing.T, e *env, _, loopID string) {
			if l := e.loop(loopID); l.Status != baton.LoopDone || l.Outcome != "DONE" {
				t.Errorf("loop = %s, outcome %q", l.Status, l.Outcome)
			}
		}},
		{"codex", "post-tool-use", "post-tool-use-apply-patch", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.relevantFiles(); strings.Join(got, ",") != "internal/auth/jwt.go,README.md,internal/auth/jwt.go,internal/auth/keys.go,README.md" {
				t.Errorf("relevant files = %q", got)
			}
		}},
		{"codex", "pre-compact", "pre-compact", nil, func(t *testing.T, e *env, _, _ string) {
			if ps, _, _ := e.store().FindPackets(fsstore.PacketFilter{Status: baton.PacketDraft}); len(ps) != 1 || ps[0].Source != "codex" {
				t.Errorf("draft packets after codex pre-compact = %d", len(ps))
			}
		}},
		{"droid", "session-start", "session-start", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.read(e.indexPath("sessions.jsonl")); !strings.Contains(got, `"session_id":"d-4711","harness":"droid","source":"resume"`) {
				t.Errorf("camelCase payload not read: %s", got)
			}
			// Droid applies CLAUDE_ENV_FILE's exports to the agent's shell
			// too: a loop started in the session binds to it at once.
			if got := e.read("claude.env"); !strings.Contains(got, "export BATON_SESSION_ID=d-4711\n") || !strings.Contains(got, "export BATON_HARNESS=droid\n") {
				t.Errorf("CLAUDE_ENV_FILE after Droid's session-start = %q", got)
			}
		}},
		{"droid", "stop", "stop", func(e *env, _ string) {
			// Droid's Stop has no last_assistant_message: the transcript
			// decides, and its last line is the promise.
			e.writeTranscript("d-4711.jsonl",
				`{"type":"session_start","id":"d-4711","title":"cache","owner":"u","cwd":"`+e.dir+`"}`,
				`{"type":"message","id":"m1","message":{"role":"user","content":[{"type":"text","text":"go"}]}}`,
				`{"type":"message","id":"m2","message":{"role":"assistant","content":[{"type":"text","text":"Done."},{"type":"text","text":"<promise>DONE</promise>"}]}}`)
		}, func(t *testing.T, e *env, _, loopID string) {
			if l := e.loop(loopID); l.Status != baton.LoopDone || l.Outcome != "DONE" {
				t.Errorf("loop = %s, outcome %q", l.Status, l.Outcome)
			}
		}},
		{"droid", "post-tool-use", "post-tool-use-create", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.relevantFiles(); len(got) != 3 || got[2] != "docs/cache.md" {
				t.Errorf("relevant files = %q", got)
			}
		}},
		{"droid", "pre-compact", "pre-compact", nil, nil},
		{"pi", "session-start", "session-start", nil, nil},
		{"pi", "stop", "stop", nil, nil},
		{"pi", "post-tool-use", "post-tool-use-edit", nil, func(t *testing.T, e *env, _, _ string) {
			if got := e.relevantFiles(); len(got) != 3 || got[2] != "internal/auth/jwt.go" {
				t.Errorf("relevant files = %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.harness+"/"+tt.payload, func(t *testing.T) {
			e := newEnv(t)
			e.vars["CLAUDE_ENV_FILE"] = filepath.Join(e.dir, "claude.env")
			packetID, loopID := e.project(hookSessions[tt.harness])
			if tt.before != nil {
				tt.before(e, loopID)
			}
			r := e.hook(tt.harness, tt.event, e.payload(tt.harness, tt.payload))
			if r.code != 0 {
				t.Fatalf("exit code %d, want 0 (stderr %s)", r.code, r.stderr)
			}
			if r.stderr != "" {
				t.Errorf("stderr = %q, want none", r.stderr)
			}
			golden.CheckString(t, filepath.Join("hooks", tt.harness, tt.payload+".golden"), e.scrub(r.stdout))
			if tt.harness != "pi" && tt.event != "session-start" && r.stdout != "" && !json.Valid([]byte(r.stdout)) {
				t.Errorf("%s %s printed non-JSON: %q", tt.harness, tt.event, r.stdout)
			}
			if tt.check != nil {
				tt.check(t, e, packetID, loopID)
			}
		})
	}
}
