package delivery

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Decide applies a person's decision to the delivery named ref, the one
// call an edge makes for any of them: approve, retry, cancel and close
// (note, optional, is the reason in the phase log), or reject (note is the
// reason, required, posted where the next run reads it). Anything else is
// Invalid.
func (s *Service) Decide(ctx context.Context, ref string, a Action, actor, note string) (*baton.Delivery, error) {
	switch a {
	case ActReject:
		if strings.TrimSpace(note) == "" {
			return nil, baton.Errorf(baton.Invalid, "reject needs a reason: it is posted where the next run reads it")
		}
		return s.Reject(ctx, ref, actor, note)
	case ActApprove, ActRetry, ActCancel, ActClose:
		return s.Act(ctx, ref, Input{Action: a, Actor: actor, Person: true, Note: note})
	}
	return nil, baton.Errorf(baton.Invalid, "%q is not a decision: want approve, reject, retry, cancel or close", baton.Truncate(string(a), 40, "…"))
}

// RunNow runs the pending phase of the delivery named ref in this process,
// started by actor, the agent's output going to live (nil for none).
// First a running phase whose heartbeat is older than lease is taken for
// dead; then the phase is claimed (a queued one before a worker gets to
// it) and run to its end. Canceling ctx cancels the run, as a person
// would; the phase can then be retried.
func (s *Service) RunNow(ctx context.Context, ref, actor string, live io.Writer, lease time.Duration) (*baton.Delivery, error) {
	if _, err := s.Reconcile(ctx, lease, WorkerID("reconciler")); err != nil {
		return nil, err
	}
	r := &Runner{Service: s, Owner: WorkerID("run"), Live: live, Foreground: true}
	return r.Run(ctx, ref, "", actor)
}

// WorkerID names a worker process in the phase log, the delivery row and
// the queue: <prefix>:<host>:<pid>.
func WorkerID(prefix string) string {
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	return fmt.Sprintf("%s:%s:%d", prefix, host, os.Getpid())
}
