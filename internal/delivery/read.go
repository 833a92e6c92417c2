package delivery

import (
	"context"
	"os"
	"path/filepath"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
)

// Detail is a delivery with its phase log (oldest first) and agent runs.
type Detail struct {
	Delivery  *baton.Delivery
	PhaseLog  []baton.PhaseLogEntry
	AgentRuns []baton.AgentRun
}

// List returns deliveries newest first.
func (s *Service) List(ctx context.Context, f baton.DeliveryFilter) ([]*baton.Delivery, error) {
	return s.Store().FindDeliveries(ctx, f)
}

// Get returns the delivery named ref (an id, "#seq" or a unique id
// prefix, as Resolve takes) with its phase log and agent runs.
func (s *Service) Get(ctx context.Context, ref string) (*Detail, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	log, err := s.Store().PhaseLog(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	runs, err := s.Store().AgentRuns(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	return &Detail{Delivery: d, PhaseLog: log, AgentRuns: runs}, nil
}

// ParseFilter reads a list filter from its words, as a person or a query
// string gives them: a phase and a run status, each "" for any. Errors are
// Invalid.
func ParseFilter(phase, status string) (baton.DeliveryFilter, error) {
	var f baton.DeliveryFilter
	if phase != "" {
		p, err := baton.ParsePhase(phase)
		if err != nil {
			return f, err
		}
		f.Phase = p
	}
	if status != "" {
		f.RunStatus = baton.RunStatus(status)
		if !f.RunStatus.Valid() {
			return f, baton.Errorf(baton.Invalid, "unknown status %q: want pending, running, succeeded, failed or blocked", status)
		}
	}
	return f, nil
}

// Current returns the delivery with id as it is now, without its history:
// what a watcher polls.
func (s *Service) Current(ctx context.Context, id string) (*baton.Delivery, error) {
	return s.Store().FindDeliveryByID(ctx, id)
}

// PhaseLog returns the phase log of the delivery with id, oldest first.
func (s *Service) PhaseLog(ctx context.Context, id string) ([]baton.PhaseLogEntry, error) {
	return s.Store().PhaseLog(ctx, id)
}

// AgentRun returns agent run n (from 1) of the delivery named ref.
func (s *Service) AgentRun(ctx context.Context, ref string, n int) (baton.AgentRun, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return baton.AgentRun{}, err
	}
	runs, err := s.Store().AgentRuns(ctx, d.ID)
	if err != nil {
		return baton.AgentRun{}, err
	}
	for _, r := range runs {
		if r.N == n {
			return r, nil
		}
	}
	return baton.AgentRun{}, baton.Errorf(baton.NotFound, "delivery %s has no run %d: `baton delivery log %s` lists them", d.ID, n, d.ID)
}

// LogFile is one raw log an agent run left on disk.
type LogFile struct {
	Name string // agentrun.EventsLog, StdoutLog or StderrLog
	Path string
	Size int64
}

// LogFiles lists the raw logs run left that still exist: the event
// stream, stdout, then stderr.
func LogFiles(run baton.AgentRun) []LogFile {
	if run.LogDir == "" {
		return nil
	}
	var out []LogFile
	for _, name := range []string{agentrun.EventsLog, agentrun.StdoutLog, agentrun.StderrLog} {
		p := filepath.Join(run.LogDir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, LogFile{Name: name, Path: p, Size: fi.Size()})
		}
	}
	return out
}
