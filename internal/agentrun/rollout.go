package agentrun

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Codex's session files (rollouts) are $CODEX_HOME/sessions/YYYY/MM/DD/
// rollout-<time>-<thread id>.jsonl. `codex exec --json` never names the
// model it ran; the rollout's turn_context lines do. Codex and the agent
// it runs may both write CODEX_HOME, so the rollout is read like anything
// an agent wrote: a regular file only, never through a link in its last
// component, and only its first maxRolloutScan bytes.
const (
	maxRolloutScan = 8 << 20
	maxRolloutLine = 1 << 20
)

// codexModel returns the model of Codex thread threadID (a UUID; an id
// that is not a valid baton id, which would hold a glob character or a
// path, is not looked up) from its rollout
// under codexHome, filed on one of the days the run spanned (in UTC or
// local time: Codex files by local date). "" when it is not found.
func codexModel(codexHome, threadID string, start, end time.Time) string {
	if codexHome == "" || !filepath.IsAbs(codexHome) || !baton.ValidID(threadID) {
		return ""
	}
	seen := map[string]bool{}
	for _, t := range []time.Time{start, end, start.UTC(), end.UTC(), start.Local(), end.Local()} {
		day := filepath.Join(codexHome, "sessions", t.Format("2006"), t.Format("01"), t.Format("02"))
		if seen[day] {
			continue
		}
		seen[day] = true
		files, _ := filepath.Glob(filepath.Join(day, "rollout-*-"+threadID+".jsonl"))
		for _, f := range files {
			if m := rolloutModel(f); m != "" {
				return m
			}
		}
	}
	return ""
}

// rolloutModel reads the model of the first turn_context line of the
// rollout at path.
func rolloutModel(path string) string {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lr := newLineReader(io.LimitReader(f, maxRolloutScan), maxRolloutLine, nil)
	for {
		b, long, err := lr.next()
		if err != nil {
			return ""
		}
		if long || !bytes.Contains(b, []byte(`"turn_context"`)) {
			continue
		}
		var line struct {
			Type    string `json:"type"`
			Payload struct {
				Model string `json:"model"`
			} `json:"payload"`
		}
		if json.Unmarshal(b, &line) == nil && line.Type == "turn_context" && line.Payload.Model != "" {
			return line.Payload.Model
		}
	}
}
