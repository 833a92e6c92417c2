package loop

import (
	"context"
	"strings"

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

// Start creates the loop in st and makes it the foreground loop; previous
// is the foreground loop it replaced ("" when none). Every edge (the CLI,
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
	previous, err = st.SetForegroundLoop(ctx, l.ID)
	if err != nil {
		return l, "", err
	}
	return l, previous, nil
}
