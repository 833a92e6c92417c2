package loop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// StartRequest is a loop to start: its prompt given, or taken from a
// packet (its Next Prompt, else its Intent, with the packet's promise and
// iteration limit unless the request sets them).
type StartRequest struct {
	Prompt     string
	FromPacket string // a packet id, prefix or "latest"
	// MaxIterations < 0 takes the packet's limit, else the default; 0 is
	// no limit.
	MaxIterations int
	Promises      []string
	SessionID     string // the session the loop is bound to; "" binds it at the first stop
}

// Start creates the loop in st and makes it the foreground loop of its
// session (or the unbound loop, taken by the first session that stops);
// previous is the loop it replaced there ("" when none). Every edge (the CLI,
// the MCP server) starts loops through it.
func Start(ctx context.Context, st *fsstore.Store, req StartRequest) (l *baton.Loop, previous string, err error) {
	for _, p := range req.Promises {
		if Normalize(p) == "" {
			return nil, "", baton.Errorf(baton.Invalid, "a loop promise must not be empty")
		}
	}
	l = &baton.Loop{MaxIterations: req.MaxIterations, CompletionPromises: req.Promises, Iteration: 1, SessionID: req.SessionID, Prompt: req.Prompt}
	if req.FromPacket != "" {
		if req.Prompt != "" {
			return nil, "", baton.Errorf(baton.Invalid, "give the loop prompt one way: a prompt or a packet")
		}
		p, err := st.ResolvePacket(req.FromPacket)
		if err != nil {
			return nil, "", err
		}
		l.SourcePacketID = p.ID
		l.Prompt = p.SectionText(baton.SectionNextPrompt)
		if l.Prompt == "" {
			l.Prompt = p.SectionText(baton.SectionIntent)
		}
		if l.Prompt == "" {
			return nil, "", baton.Errorf(baton.Invalid, "packet %s has no Next Prompt or Intent to loop on", p.ID)
		}
		if len(l.CompletionPromises) == 0 && p.LoopPromise != nil && Normalize(*p.LoopPromise) != "" {
			l.CompletionPromises = []string{*p.LoopPromise}
		}
		if l.MaxIterations < 0 && p.LoopMaxIterations > 0 {
			l.MaxIterations = p.LoopMaxIterations
		}
	}
	if strings.TrimSpace(l.Prompt) == "" {
		return nil, "", baton.Errorf(baton.Invalid, "the loop prompt is empty")
	}
	if len(l.CompletionPromises) == 0 {
		l.CompletionPromises = []string{"DONE"}
	}
	if l.MaxIterations < 0 {
		l.MaxIterations = baton.DefaultLoopMaxIterations
	}
	if err := st.CreateLoop(ctx, l); err != nil {
		return nil, "", err
	}
	previous, err = st.SetForegroundLoop(ctx, l.SessionID, l.ID)
	if err != nil {
		return l, "", err
	}
	return l, previous, nil
}

// Change is a person's change of a loop's status.
type Change string

const (
	Pause  Change = "pause"  // active -> paused
	Resume Change = "resume" // paused -> active
	Cancel Change = "cancel" // active or paused -> cancelled; it stops being the foreground loop
)

// SetStatus applies change to loop id in st, noting it in the loop's
// Notes at now. rebind, on resume, binds the loop to session ("" unbinds
// it). It returns the loop and the status it had.
func SetStatus(ctx context.Context, st *fsstore.Store, id string, change Change, rebind bool, session string, now time.Time) (l *baton.Loop, from baton.LoopStatus, err error) {
	l, err = st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
		from = l.Status
		switch {
		case l.Status.Ended():
			return baton.Errorf(baton.Conflict, "loop %s is already %s (outcome %s)", l.ID, l.Status, l.Outcome)
		case change == Pause && l.Status == baton.LoopActive:
			l.Status = baton.LoopPaused
		case change == Resume && l.Status == baton.LoopPaused:
			l.Status = baton.LoopActive
			l.ConsecutiveBlocks = 0
			if rebind {
				l.SessionID = session
			}
		case change == Cancel:
			l.Status, l.Outcome = baton.LoopCancelled, baton.OutcomeCancelled
			l.ConsecutiveBlocks = 0
		default:
			return baton.Errorf(baton.Conflict, "loop %s is %s; %s does not apply", l.ID, l.Status, change)
		}
		l.Notes = AppendNote(l.Notes, now, fmt.Sprintf("%s at iteration %d (%s -> %s)", change, l.Iteration, from, l.Status))
		return nil
	})
	if err != nil {
		return nil, from, err
	}
	switch {
	case change == Cancel:
		if _, err := st.ClearForegroundLoop(ctx, l.ID); err != nil {
			return l, from, err
		}
	case rebind && change == Resume:
		// A foreground loop moves with its session.
		if f, err := st.Foreground(); err == nil && f.Has(l.ID) {
			if _, err := st.SetForegroundLoop(ctx, l.SessionID, l.ID); err != nil {
				return l, from, err
			}
		}
	}
	return l, from, nil
}

// Activate makes loop id the foreground loop of the session it is bound
// to (or the unbound loop). rebind first binds it to session ("" unbinds
// it, so the next session that stops takes it): the way to hand a loop to
// a new session after /clear. It returns the loop and the loop it replaced
// in that slot ("" when none).
func Activate(ctx context.Context, st *fsstore.Store, id string, rebind bool, session string) (l *baton.Loop, previous string, err error) {
	if rebind {
		l, err = st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
			if l.Status.Ended() {
				return endedError(l)
			}
			l.SessionID = session
			l.ConsecutiveBlocks = 0
			return nil
		})
	} else {
		l, err = st.FindLoopByID(id)
		if err == nil && l.Status.Ended() {
			err = endedError(l)
		}
	}
	if err != nil {
		return nil, "", err
	}
	previous, err = st.SetForegroundLoop(ctx, l.SessionID, l.ID)
	return l, previous, err
}

func endedError(l *baton.Loop) error {
	return baton.Errorf(baton.Conflict, "loop %s is %s (outcome %s): start a new loop with `baton loop start --from-packet` or a prompt", l.ID, l.Status, l.Outcome)
}

// AppendNote adds a dated bullet to a loop's Notes body: one line of
// text, at most 400 bytes.
func AppendNote(notes string, at time.Time, text string) string {
	notes = strings.TrimRight(notes, "\n")
	if strings.TrimSpace(notes) == "" {
		notes = ""
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > 400 {
		text = baton.Truncate(text, 400, "…")
	}
	return notes + "\n- " + baton.FormatTime(at) + " " + text + "\n"
}
