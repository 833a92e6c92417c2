package hook

import (
	"fmt"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/prompt"
)

// MaxContext bounds the session-start context. Claude Code spills text
// over 10,000 characters into a file and shows a preview; baton stays
// well below.
const MaxContext = 6000

// Parts of the context get their own budgets so one long prompt cannot
// crowd out the rest.
const (
	maxNextPrompt = 2000
	maxLoopPrompt = 1500
)

// ActivePacket is the packet a session continues: the most recently
// updated draft or active packet (what `baton pickup latest` renders), or
// nil.
func ActivePacket(st *fsstore.Store) *baton.Packet {
	l, err := st.Latest()
	if err != nil || l.Fallback {
		return nil
	}
	return l.Packet
}

// SessionContext is what session-start tells the agent: the packet it
// continues (purpose and Next Prompt), the foreground loop and its
// iteration, and how many files were touched since the last packet.
// afterCompact re-states it after compaction and names the packet the
// pre-compact hook saved. Plain, factual text under MaxContext bytes.
// Store files that cannot be read (corrupt, too large, links out of the
// store) are left out and returned as warnings for the user.
//
// An active loop this machine does not trust as it is (one a checkout
// brought or changed: fsstore.ForeignLoops) is named once per version,
// by id and with where a person reads and adopts it, never with its
// prompt or its commands (fsstore.Store.NewForeignLoops); told lists the
// loops named.
func SessionContext(st *fsstore.Store, sessionID string, afterCompact bool) (text string, told []*baton.Loop, warnings []error, err error) {
	var b strings.Builder
	if afterCompact {
		fmt.Fprintf(&b, "baton (after compaction): the working context of this project is in %s; it is restated here.\n", st.Dir())
	} else {
		fmt.Fprintf(&b, "baton: the working context of this project is in %s.\n", st.Dir())
	}
	latest, err := st.Latest()
	if err != nil {
		return "", nil, nil, err
	}
	warnings = latest.Skipped
	p := latest.Packet
	if p != nil && latest.Fallback {
		fmt.Fprintf(&b, "\nNo draft or active packet. The most recent, %s (%s): %s; `baton pickup %s` renders it.\n", p.ID, p.Status, p.Purpose, p.ID)
		p = nil
	}
	if p != nil {
		fmt.Fprintf(&b, "\nPacket %s (%s): %s\n", p.ID, p.Status, p.Purpose)
		if np := p.SectionText(baton.SectionNextPrompt); np != "" {
			fmt.Fprintf(&b, "Next Prompt:\n%s\n", baton.Truncate(np, maxNextPrompt, prompt.TruncatedMarker))
		}
		fmt.Fprintf(&b, "Render it in full with `baton pickup %s`.\n", p.ID)
	}
	if afterCompact && sessionID != "" {
		saved, ok, err := st.NewestOfSession(sessionID)
		if err != nil {
			return "", nil, nil, err
		}
		if ok && (p == nil || saved.ID != p.ID) {
			fmt.Fprintf(&b, "\nBefore compaction baton saved packet %s (`baton pickup %s`).\n", saved.ID, saved.ID)
		}
	}
	fg, err := st.Foreground()
	if baton.ErrorCode(err) == baton.Invalid {
		warnings = append(warnings, err)
	} else if err != nil {
		return "", nil, nil, err
	}
	l, err := st.LoopOf(fg, sessionID)
	if baton.ErrorCode(err) == baton.Invalid {
		warnings = append(warnings, err)
	} else if err != nil {
		return "", nil, nil, err
	}
	if l == nil {
		l = otherSessionsLoop(st, fg, sessionID)
	}
	if l != nil {
		bound := "not bound to a session yet"
		switch l.SessionID {
		case "":
		case sessionID:
			bound = "bound to this session"
		default:
			bound = "bound to another session (" + l.SessionID + "); to continue it here, `baton loop activate " + l.ID + " --rebind`"
		}
		fmt.Fprintf(&b, "\nForeground loop %s: %s, iteration %s, %s.\n", l.ID, l.Status, progressOf(l), bound)
		if l.Status == baton.LoopActive && (l.SessionID == "" || l.SessionID == sessionID) {
			fmt.Fprintf(&b, "Each time you stop, the loop prompt comes back until you %s.\nLoop prompt:\n%s\n", loop.HowToFinish(l), baton.Truncate(l.Prompt, maxLoopPrompt, prompt.TruncatedMarker))
		}
	}
	told, fw, err := st.NewForeignLoops(fg)
	if err != nil {
		warnings = append(warnings, err)
	}
	warnings = append(warnings, fw...)
	for i, f := range told {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Loop %s is active in this checkout but was not started or adopted on this machine (a clone, a pull or a copy brought it): baton gives you none of its prompt and runs none of its commands. The user can read them with `baton loop show %s` and adopt the loop with `baton loop adopt %s`.\n", f.ID, f.ID, f.ID)
	}
	since, err := st.NewestCreated()
	if err != nil {
		return "", nil, nil, err
	}
	// What `baton files` lists: touches since the last packet that no
	// packet has taken yet.
	files, _, err := st.RankFiles(fsstore.FileQuery{Since: since, Unattached: true, Tail: fsstore.RecentLogBytes})
	if err != nil {
		warnings = append(warnings, err)
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, "\n%d file(s) touched since the last packet are suggested for the next handoff (`baton files`).\n", len(files))
	}
	if latest.Packet == nil && l == nil && len(told) == 0 {
		b.WriteString("No packet or loop yet: `baton handoff \"<purpose>\" --body -` writes a packet, `baton loop start` starts a loop.\n")
	}
	return baton.Truncate(b.String(), MaxContext, prompt.TruncatedMarker), told, warnings, nil
}

// otherSessionsLoop is, for a session without a loop of its own, the
// most recently updated active loop another session runs (of those this
// machine trusts, f): after /clear (a new session id) it is usually the
// one the user means, and the context says how to take it over. It never
// acts on it.
func otherSessionsLoop(st *fsstore.Store, f fsstore.Foreground, sessionID string) *baton.Loop {
	var best *baton.Loop
	for _, id := range f.IDs() {
		l, err := st.FindLoopByID(id)
		if err != nil || l.Status != baton.LoopActive || l.SessionID == sessionID || !f.Trusts(l) {
			continue
		}
		if best == nil || l.UpdatedAt.After(best.UpdatedAt) {
			best = l
		}
	}
	return best
}

func progressOf(l *baton.Loop) string {
	if l.MaxIterations == 0 {
		return fmt.Sprintf("%d (no limit)", l.Iteration)
	}
	return fmt.Sprintf("%d/%d", l.Iteration, l.MaxIterations)
}
