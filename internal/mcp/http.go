package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultSessionIdle is how long an HTTP session may go without a request
// before the server closes it. A client that comes back later gets 404
// and starts a new session, as the specification asks; one that never
// comes back no longer holds memory.
const DefaultSessionIdle = 30 * time.Minute

// HTTPOptions tunes HTTPHandler.
type HTTPOptions struct {
	// SessionIdle closes a session that receives no request for this
	// long; 0 takes DefaultSessionIdle, a negative value never closes one.
	SessionIdle time.Duration
}

// callHeader carries, from the HTTP request to the MCP handlers it
// starts, the key of that request's context. The handler sets it on every
// request, replacing whatever a client sent.
const callHeader = "Baton-Http-Call"

// HTTPHandler serves the server over streamable HTTP. The SDK refuses a
// loopback request whose Host is not loopback (DNS rebinding);
// cross-origin protection refuses what a web page could send through the
// user's browser. Idle sessions are closed, and a call whose HTTP request
// ends (the client hung up) is cancelled: with no event store nobody can
// ever read its answer, and a GitHub fetch must not run on for minutes.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	idle := o.SessionIdle
	switch {
	case idle == 0:
		idle = DefaultSessionIdle
	case idle < 0:
		idle = 0 // the SDK's "never"
	}
	h := http.NewCrossOriginProtection().Handler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.SDK() }, &sdk.StreamableHTTPOptions{
		SessionTimeout: idle,
		// The newest protocol ties a call to its POST already.
		PropagateRequestCancellation: true,
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := rand.Text()
		r.Header.Set(callHeader, key)
		s.calls.Store(key, r.Context())
		defer s.calls.Delete(key)
		h.ServeHTTP(w, r)
	})
}

// callContext ties a call's context to the HTTP request that carried it,
// so the call ends when the request does. A call whose request has ended
// already gets an ended context; one that came another way (stdio) is
// left alone.
func (s *Server) callContext(ctx context.Context, method string, req sdk.Request) (context.Context, context.CancelFunc) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil || strings.HasPrefix(method, "notifications/") {
		return ctx, func() {}
	}
	key := extra.Header.Get(callHeader)
	if key == "" {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	httpCtx, ok := s.calls.Load(key)
	if !ok {
		cancel(errRequestEnded)
		return ctx, func() {}
	}
	stop := context.AfterFunc(httpCtx.(context.Context), func() { cancel(errRequestEnded) })
	return ctx, func() { stop(); cancel(nil) }
}

// errRequestEnded is why a call's context ends when its HTTP request does.
var errRequestEnded = errors.New("the HTTP request that made this call ended")
