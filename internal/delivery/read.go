package delivery

import (
	"context"

	"github.com/baton-agent/baton"
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
