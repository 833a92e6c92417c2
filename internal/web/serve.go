package web

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/baton-agent/baton"
)

// The limits of baton's HTTP servers (serve and mcp --http). A client
// has HeaderTimeout for its request line and headers, then the body
// timeout for its body; a connection idle between requests closes after
// IdleTimeout. Responses have no deadline: event streams last as long
// as their client listens.
const (
	HeaderTimeout      = 10 * time.Second
	DefaultBodyTimeout = 10 * time.Second
	IdleTimeout        = 2 * time.Minute
	// ShutdownTimeout is how long a stopping server waits for requests
	// in flight before it closes their connections.
	ShutdownTimeout = 10 * time.Second
	// DefaultMaxOpenBodies is how many unauthenticated request bodies
	// (webhooks, sign-ins) are read at once.
	DefaultMaxOpenBodies = 64
)

// Serve serves the server's routes on ln until ctx ends, then stops as
// Serve (the function) does.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return serve(ctx, ln, s.Handler(), cmp.Or(s.BodyTimeout, DefaultBodyTimeout), s.logger())
}

// Serve serves h on ln until ctx ends, with the limits above. When ctx
// ends it stops taking connections, cancels every request's context (so
// event streams end), and waits up to ShutdownTimeout for the requests
// in flight. It returns nil after such a stop, or the error that ended
// serving.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	return serve(ctx, ln, h, DefaultBodyTimeout, log)
}

func serve(ctx context.Context, ln net.Listener, h http.Handler, body time.Duration, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{
		Handler:           bodyDeadline(h, body),
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		// Requests' contexts end with the server's, and with them every
		// event stream: Shutdown alone would wait for streams forever.
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-base.Done()
		shut, stop := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
		defer stop()
		if err := hs.Shutdown(shut); err != nil {
			_ = hs.Close()
		}
	}()
	err := hs.Serve(ln)
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// bodyDeadline gives every request body d to arrive. A read deadline on
// the connection, not http.Server.ReadTimeout: that one would also end
// event streams, because net/http cancels a request's context when a
// read of its connection times out, even a read after the body. So the
// deadline is lifted as soon as the body has been read to its end.
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r = r.WithContext(r.Context()) // a copy: the server's request keeps its body
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// errSlowBody is what reading a body returns once its deadline passed.
var errSlowBody = &baton.Error{Code: codeTimeout, Message: "the request body did not arrive in time: send it at once"}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF && !b.done:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errSlowBody
	}
	return n, err
}

// refuseBody makes a refused request's connection close after the
// answer. Otherwise net/http reads up to 256 KiB of the unread body
// before it answers, at whatever pace the sender chooses.
func refuseBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// unauthenticatedBody caps the routes that read a body before anyone is
// authenticated (GitHub webhooks, sign-in): beyond MaxOpenBodies at once
// they answer 503 at once, so slow senders cannot hold every connection
// the process may open.
func (s *Server) unauthenticatedBody(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		select {
		case s.openBodies <- struct{}{}:
			defer func() { <-s.openBodies }()
			return h(w, r)
		default:
			refuseBody(w, r)
			w.Header().Set("Retry-After", "1")
			return baton.Errorf(baton.Unavailable, "too many unauthenticated requests at once: try again in a second")
		}
	}
}

// parseForm reads a form body; a body that is not a form is Invalid.
func parseForm(r *http.Request) error {
	err := r.ParseForm()
	var mb *http.MaxBytesError
	if err == nil || errors.As(err, &mb) || baton.ErrorCode(err) != baton.Internal {
		return err
	}
	return baton.WrapError(baton.Invalid, err, "bad form")
}
