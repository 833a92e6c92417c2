package loop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/transcript"
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
	// Verify are the commands that must pass before a promise is believed;
	// with none, a loop from a packet takes the packet's validators.
	Verify        []string
	VerifyTimeout time.Duration // 0: baton.DefaultVerifyTimeout
	// Budgets; 0 is none.
	MaxTokens   int64
	MaxCostUSD  float64
	MaxDuration time.Duration
	// StallRounds is how many rounds in a row without progress pause the
	// loop; 0 is baton.DefaultStallRounds.
	StallRounds int
	// Now is when the loop starts (its id, its active clock); zero leaves
	// both to the store's clock and the first stop.
	Now time.Time
	// Usage is where counting the session's usage starts, when the
	// starting session's transcript is known (transcript.StartCursor).
	Usage *baton.UsageCursor
	// FromLoop is a loop (an id or prefix) whose prompt, promises, limits
	// and verify commands the new loop takes, unless the request sets
	// them: how a person starts afresh from a loop a checkout brought.
	FromLoop string
	// NoAdopt leaves a loop whose verify commands came from a packet
	// unadopted (see fsstore.AdoptLoop): an edge that acts for an agent
	// (MCP) must not make this machine run commands a checkout carried.
	NoAdopt bool
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
	if err := baton.CheckVerify(req.Verify, req.VerifyTimeout); err != nil {
		return nil, "", err
	}
	if req.MaxTokens < 0 || req.MaxCostUSD < 0 || req.MaxDuration < 0 {
		return nil, "", baton.Errorf(baton.Invalid, "a loop budget must not be negative (0 means none)")
	}
	if err := baton.CheckStallRounds(req.StallRounds); err != nil {
		return nil, "", err
	}
	// The active clock starts with the loop; without a time the store's
	// clock names the loop and the clock starts at its first stop.
	now := req.Now.UTC().Truncate(time.Second)
	l = &baton.Loop{MaxIterations: req.MaxIterations, CompletionPromises: req.Promises, Iteration: 1, SessionID: req.SessionID, Prompt: req.Prompt,
		Verify: req.Verify, VerifyTimeout: req.VerifyTimeout, MaxTokens: req.MaxTokens, MaxCostUSD: req.MaxCostUSD, MaxDuration: req.MaxDuration,
		StallRounds: req.StallRounds, CreatedAt: now, ActiveSince: now}
	if req.Usage != nil {
		l.Usage = *req.Usage
	}
	if req.FromLoop != "" {
		if req.Prompt != "" || req.FromPacket != "" {
			return nil, "", baton.Errorf(baton.Invalid, "give the loop prompt one way: a prompt, a packet or a loop")
		}
		src, err := st.ResolveLoop(req.FromLoop)
		if err != nil {
			return nil, "", err
		}
		l.Prompt = src.Prompt
		if len(l.CompletionPromises) == 0 {
			l.CompletionPromises = src.CompletionPromises
		}
		if l.MaxIterations < 0 {
			l.MaxIterations = src.MaxIterations
		}
		if len(l.Verify) == 0 {
			l.Verify, l.VerifyTimeout = src.Verify, src.VerifyTimeout
		}
		if l.MaxTokens == 0 && l.MaxCostUSD == 0 && l.MaxDuration == 0 {
			l.MaxTokens, l.MaxCostUSD, l.MaxDuration = src.MaxTokens, src.MaxCostUSD, src.MaxDuration
		}
		if l.StallRounds == 0 {
			l.StallRounds = src.StallRounds
		}
	}
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
		if len(l.Verify) == 0 {
			for _, v := range p.Validators {
				if strings.TrimSpace(v) != "" {
					l.Verify = append(l.Verify, v)
				}
			}
			if err := baton.CheckVerify(l.Verify, l.VerifyTimeout); err != nil {
				return nil, "", baton.Errorf(baton.Invalid, "packet %s's validators cannot verify the loop: %s", p.ID, baton.ErrorMessage(err))
			}
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
	if req.NoAdopt && req.FromPacket != "" && len(req.Verify) == 0 && len(l.Verify) > 0 {
		return l, "", nil
	}
	previous, err = st.AdoptLoop(ctx, l.SessionID, l)
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

// StatusChange is a person's change of a loop's status.
type StatusChange struct {
	Change Change
	// Rebind, on resume, binds the loop to Session ("" unbinds it).
	Rebind  bool
	Session string
	// Now stamps the note and the loop's active clock.
	Now time.Time
	// MaxTokens, MaxCostUSD and MaxDuration, when set, replace the loop's
	// budgets (resume): a loop paused at a budget continues with more.
	MaxTokens   *int64
	MaxCostUSD  *float64
	MaxDuration *time.Duration
}

func (c StatusChange) budgets() bool {
	return c.MaxTokens != nil || c.MaxCostUSD != nil || c.MaxDuration != nil
}

// SetStatus applies c to loop id in st, noting it in the loop's Notes. It
// returns the loop and the status it had.
func SetStatus(ctx context.Context, st *fsstore.Store, id string, c StatusChange) (l *baton.Loop, from baton.LoopStatus, err error) {
	if c.budgets() && c.Change != Resume {
		return nil, "", baton.Errorf(baton.Invalid, "budgets change only with resume")
	}
	for _, bad := range []bool{c.MaxTokens != nil && *c.MaxTokens < 0, c.MaxCostUSD != nil && *c.MaxCostUSD < 0, c.MaxDuration != nil && *c.MaxDuration < 0} {
		if bad {
			return nil, "", baton.Errorf(baton.Invalid, "a loop budget must not be negative (0 means none)")
		}
	}
	now := c.Now.UTC()
	l, err = st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
		from = l.Status
		switch {
		case l.Status.Ended():
			return baton.Errorf(baton.Conflict, "loop %s is already %s (outcome %s)", l.ID, l.Status, l.Outcome)
		case c.Change == Pause && l.Status == baton.LoopActive:
			l.Status = baton.LoopPaused
			l.StopClock(now)
		case c.Change == Resume && l.Status == baton.LoopPaused:
			l.Status = baton.LoopActive
			l.ConsecutiveBlocks = 0
			l.PauseReason = ""
			l.ActiveSince = now
			// What the session spent while the loop was paused is not
			// the loop's: the next read skips lines stamped before now.
			l.Usage.Since = now
			if l.Usage.Droid && l.Usage.Path != "" {
				// Droid keeps running totals, not stamped lines: the
				// totals now are where the loop's spending resumes.
				l.Usage = transcript.StartCursor(l.Usage.Path, true, now)
			}
			if c.Rebind {
				rebindTo(l, c.Session, now)
			}
		case c.Change == Resume && l.Status == baton.LoopActive && c.budgets():
			// Only the budgets change.
		case c.Change == Cancel:
			l.Status, l.Outcome = baton.LoopCancelled, baton.OutcomeCancelled
			l.ConsecutiveBlocks = 0
			l.StopClock(now)
		default:
			return baton.Errorf(baton.Conflict, "loop %s is %s; %s does not apply", l.ID, l.Status, c.Change)
		}
		note := fmt.Sprintf("%s at iteration %d (%s -> %s)", c.Change, l.Iteration, from, l.Status)
		if c.MaxTokens != nil {
			l.MaxTokens = *c.MaxTokens
			note += fmt.Sprintf(", max_tokens %d", l.MaxTokens)
		}
		if c.MaxCostUSD != nil {
			l.MaxCostUSD = *c.MaxCostUSD
			note += fmt.Sprintf(", max_cost_usd %g", l.MaxCostUSD)
		}
		if c.MaxDuration != nil {
			l.MaxDuration = *c.MaxDuration
			note += ", max_duration " + l.MaxDuration.String()
		}
		l.Notes = AppendNote(l.Notes, now, note)
		return nil
	})
	if err != nil {
		return nil, from, err
	}
	switch {
	case c.Change == Cancel:
		if _, err := st.ClearForegroundLoop(ctx, l.ID); err != nil {
			return l, from, err
		}
	case c.Rebind && c.Change == Resume:
		// A foreground loop moves with its session.
		if f, err := st.Foreground(); err == nil && f.Has(l.ID) {
			if _, err := st.SetForegroundLoop(ctx, l.SessionID, l); err != nil {
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
func Activate(ctx context.Context, st *fsstore.Store, id string, rebind bool, session string, now time.Time) (l *baton.Loop, previous string, err error) {
	if rebind {
		l, err = st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
			if l.Status.Ended() {
				return endedError(l)
			}
			rebindTo(l, session, now)
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
	previous, err = st.SetForegroundLoop(ctx, l.SessionID, l)
	return l, previous, err
}

// Adopt makes this machine trust loop id as it is now, its prompt and
// verify commands (fsstore.AdoptLoop), binds it to session ("" leaves it
// for the next session that stops) and makes it that session's
// foreground loop. A loop a checkout brought, or one a checkout changed
// after it was adopted, runs only after this: the person has read what
// the loop will feed the agent and run. It returns the loop and the loop
// it replaced in that slot ("" when none).
func Adopt(ctx context.Context, st *fsstore.Store, id, session string, now time.Time) (l *baton.Loop, previous string, err error) {
	l, err = st.UpdateLoop(ctx, id, func(l *baton.Loop) error {
		if l.Status.Ended() {
			return endedError(l)
		}
		// The session it names is another machine's, or an old one.
		rebindTo(l, session, now)
		l.Notes = AppendNote(l.Notes, now.UTC(), "adopted on this machine")
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	previous, err = st.AdoptLoop(ctx, l.SessionID, l)
	return l, previous, err
}

// rebindTo hands l to session: its usage is counted from the new
// session's transcript, from now on.
func rebindTo(l *baton.Loop, session string, now time.Time) {
	l.SessionID = session
	l.ConsecutiveBlocks = 0
	l.Usage = baton.UsageCursor{Since: now.UTC()}
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
