package loop

import (
	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/harness"
)

// TranscriptEnv is what baton's session-start hook exports beside
// BATON_SESSION_ID: the session's transcript.
const TranscriptEnv = "BATON_TRANSCRIPT_PATH"

// Session is the harness session a command runs in.
type Session struct {
	ID string
	// Harness is whose session it is, and TranscriptPath its transcript
	// ("" when not known).
	Harness        baton.Harness
	TranscriptPath string
	// Var is the variable that named it.
	Var string
}

// CurrentSession says which harness session a command run from an
// agent's shell belongs to, from the variables the harnesses set there
// (harness.EnvSessions): Codex's CODEX_THREAD_ID, pi's PI_SESSION_ID,
// Claude Code's CLAUDE_CODE_SESSION_ID, and BATON_SESSION_ID, which
// baton's session-start exports where a harness takes an env file
// (Claude Code, Droid). The zero Session when none is set.
//
// A session started from another's shell inherits that one's variables
// (codex exec run by Claude Code has Claude's session id beside its own),
// and it started after it: of several, the one that first started latest
// in this machine's session log is the one the command runs in. Sessions
// the log does not name come after those it does (their hooks have not
// run in this project, so no stop of theirs would continue a loop), in
// the order EnvSessions gives.
func CurrentSession(st *fsstore.Store, getenv func(string) string) Session {
	cands := harness.EnvSessions(getenv)
	if len(cands) == 0 {
		return Session{}
	}
	pick := cands[0]
	tp := ""
	if pick.Var == harness.SessionIDEnv {
		tp = getenv(TranscriptEnv)
	}
	var spans map[string]fsstore.SessionSpan
	if len(cands) > 1 || tp == "" {
		ids := make([]string, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		spans, _ = st.SessionSpans(ids) // a log that cannot be read names none
		for _, c := range cands {
			sp, ok := spans[c.ID]
			if !ok {
				continue
			}
			if best, ok := spans[pick.ID]; !ok || sp.First.After(best.First) {
				pick = c
			}
		}
		if pick.Var != harness.SessionIDEnv {
			tp = ""
		}
	}
	s := Session{ID: pick.ID, TranscriptPath: tp, Var: pick.Var}
	if pick.Harness != nil {
		s.Harness = pick.Harness.Name
	}
	if sp, ok := spans[pick.ID]; ok {
		if s.TranscriptPath == "" {
			s.TranscriptPath = sp.Last.TranscriptPath
		}
		if s.Harness == "" {
			s.Harness = sp.Last.Harness
		}
	}
	return s
}
