package delivery

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/diskspace"
	"github.com/baton-agent/baton/internal/queue"
)

// An agent, a verify command or anything else on the machine can fill the
// disk that holds the data directory (and, on SQLite, the database). A
// full disk once wedged a server: the phase's end could not be written,
// the delivery stayed running, the reconciler failed every 15 seconds,
// and nothing moved until files were deleted by hand. So:
//
//   - while there is room, the data directory holds a reserve file
//     (reserveSize), and a phase that ends on a full disk gives it up,
//     with the delivery's worktree (what the agent left there), so that
//     its failure is recorded with a clear message;
//   - a queued phase is not claimed while the disk is full: the job waits
//     (spaceWait at a time, without spending an attempt) and runs by
//     itself once there is room again;
//   - the reserve is taken again once there is room for it.
const (
	// lowSpace is the free space under which the disk counts as full.
	lowSpace = 16 << 20
	// reserveSize is the room set aside for baton's own last writes.
	reserveSize = 16 << 20
	// spaceWait is how long a queued phase waits for room before it
	// looks again.
	spaceWait = 10 * time.Second
)

// reserve is the data directory's reserve file.
func (s *Service) reserve() *diskspace.Reserve {
	s.spaceOnce.Do(func() {
		s.space = &diskspace.Reserve{Path: filepath.Join(s.DataDir, "space-reserve"), Size: reserveSize}
	})
	return s.space
}

// diskFull reports whether the disk holding the data directory is full,
// with its free bytes. A disk whose room cannot be read is not full.
func (s *Service) diskFull() (free int64, full bool) {
	n, err := diskspace.Free(s.DataDir)
	return n, err == nil && n < lowSpace
}

// spaceError says the disk is full and what to do.
func (s *Service) spaceError(free int64, then string) error {
	return baton.Errorf(baton.Unavailable, "the disk holding baton's data directory %s is full (%s free): free some space, then %s",
		s.DataDir, sizeWords(int(free)), then)
}

// roomToClaim says whether a phase may be claimed now: on a full disk a
// worker's job waits (a queue.SnoozeError) and a person is told why; with
// room, the reserve is taken again if it was given up.
func (r *Runner) roomToClaim(person string) error {
	s := r.Service
	if free, full := s.diskFull(); full {
		if person != "" {
			return s.spaceError(free, "run it again")
		}
		return &queue.SnoozeError{Until: s.now().Add(spaceWait), Err: s.spaceError(free, "the queued phase runs by itself")}
	}
	_, _ = s.reserve().Hold(lowSpace) // best effort: the disk may be small
	return nil
}

// outOfSpace turns the outcome of a phase that ended on a full disk into
// one that says so, after freeing what the phase can: the reserve, and
// the delivery's worktree (the work is on the work branch, or could not
// be committed for want of room). A phase that did what it should keeps
// its outcome, with a warning.
func (r *Runner) outOfSpace(ctx context.Context, d *baton.Delivery, out outcome) outcome {
	s := r.Service
	free, full := s.diskFull()
	if !full {
		return out
	}
	s.reserve().Release()
	freed := s.Workspaces().Release(context.WithoutCancel(ctx), d) == nil
	what := "gave up its reserve"
	if freed {
		what += " and removed the delivery's worktree (anything in it not committed is gone)"
	}
	why := fmt.Sprintf("the disk holding baton's data directory %s was full (%s free) when %s ended; baton %s", s.DataDir, sizeWords(int(free)), d.Phase, what)
	if out.err == nil {
		out.warn("%s", why)
		return out
	}
	out.err = baton.WrapError(baton.Unavailable, out.err, "%s: free some space, then `baton delivery retry %s`", why, d.ID)
	return out
}
