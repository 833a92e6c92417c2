package delivery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/safefile"
)

// Detail is a delivery with its phase log (oldest first), agent runs and
// the number of its newest event.
type Detail struct {
	Delivery  *baton.Delivery
	PhaseLog  []baton.PhaseLogEntry
	AgentRuns []baton.AgentRun
	// SetupRuns are the set-ups that made its worktree ready.
	SetupRuns []baton.SetupRun
	// LastEvent numbers the newest event: a stream resumed after it sees
	// only what happens next.
	LastEvent int64
}

// List returns deliveries newest first.
func (s *Service) List(ctx context.Context, f baton.DeliveryFilter) ([]*baton.Delivery, error) {
	return s.Store().FindDeliveries(ctx, f)
}

// Get returns the delivery named ref (an id, "#seq" or a unique id
// prefix, as Resolve takes) with its phase log, agent runs, set-ups and
// last event.
func (s *Service) Get(ctx context.Context, ref string) (*Detail, error) {
	d, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	st := s.Store()
	// The newest event's number first, then the delivery as it is now:
	// its state is at least as new as that event, so a change committed
	// between the reads reaches a live page as an event after LastEvent.
	// Read the other way round, a page could show the event that ended
	// a run beside the state from before it, and wait for nothing.
	last, err := st.LastEvent(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	if d, err = st.FindDeliveryByID(ctx, d.ID); err != nil {
		return nil, err
	}
	log, err := st.PhaseLog(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	runs, err := st.AgentRuns(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	setups, err := st.SetupRuns(ctx, d.ID)
	if err != nil {
		return nil, err
	}
	return &Detail{Delivery: d, PhaseLog: log, AgentRuns: runs, SetupRuns: setups, LastEvent: last}, nil
}

// The words of a list filter, the same for every edge: the CLI's flags,
// the API's query, the MCP deliveries tool.
var (
	// FilterPhases are the phases a filter takes: every phase.
	FilterPhases = baton.Phases
	// FilterStatuses are the run statuses a filter takes.
	FilterStatuses = baton.RunStatuses
	// FilterStates are the states a filter takes: active (not closed),
	// waiting (for a person, the longest waiting first), closed, or all
	// ("" too).
	FilterStates = []string{"active", "waiting", "closed", "all"}
)

// ParseFilter reads a list filter from its words, as a person, a query
// string or an agent gives them: a phase (FilterPhases), a run status
// (FilterStatuses) and a state (FilterStates), each "" for any. Errors
// are Invalid and name the words that would do.
func ParseFilter(phase, status, state string) (baton.DeliveryFilter, error) {
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
			return f, baton.Errorf(baton.Invalid, "unknown status %q: want %s", baton.Truncate(status, 40, "…"), orList(FilterStatuses))
		}
	}
	switch state {
	case "", "all":
	case "active":
		f.Open = true
	case "closed":
		f.Closed = true
	case "waiting":
		f.Waiting = true
	default:
		return f, baton.Errorf(baton.Invalid, "bad state %q: want %s", baton.Truncate(state, 20, "…"), orList(FilterStates))
	}
	return f, nil
}

// orList joins words as a sentence does: "a, b or c".
func orList[S ~string](words []S) string {
	var b strings.Builder
	for i, w := range words {
		switch {
		case i == 0:
		case i == len(words)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(w))
	}
	return b.String()
}

// LastEvent returns the number of the newest event of the delivery with
// id (0: none).
func (s *Service) LastEvent(ctx context.Context, id string) (int64, error) {
	return s.Store().LastEvent(ctx, id)
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
	for _, name := range []string{agentrun.EventsLog, agentrun.StdoutLog, agentrun.StderrLog, SetupLog} {
		p := filepath.Join(run.LogDir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, LogFile{Name: name, Path: p, Size: fi.Size()})
		}
	}
	return out
}

// The raw logs an agent run may leave, by name.
const (
	EventsLog = agentrun.EventsLog // the agent's JSONL event stream
	StdoutLog = agentrun.StdoutLog
	StderrLog = agentrun.StderrLog
	// SetupLog is the output of the set-up that ran before the agent.
	SetupLog = "setup.log"
)

// OpenLog opens the raw log name (EventsLog, StdoutLog or StderrLog) of
// run, when it is on this machine: a worker elsewhere keeps its logs in
// its own data directory. Errors are NotFound and say why.
func OpenLog(run baton.AgentRun, name string) (*os.File, error) {
	if name != EventsLog && name != StdoutLog && name != StderrLog && name != SetupLog {
		return nil, baton.Errorf(baton.NotFound, "no log %q: want %s, %s, %s or %s", baton.Truncate(name, 40, "…"), EventsLog, StdoutLog, StderrLog, SetupLog)
	}
	for _, lf := range LogFiles(run) {
		if lf.Name != name {
			continue
		}
		if f, err := safefile.OpenRegular(lf.Path); err == nil {
			return f, nil
		}
		break
	}
	return nil, baton.Errorf(baton.NotFound, "run %d has no %s on this machine (a worker elsewhere keeps its logs in its own data directory)", run.N, name)
}

// Count counts the deliveries f keeps, whatever its Limit: with no
// BeforeSeq or AfterSeq, a list's total.
func (s *Service) Count(ctx context.Context, f baton.DeliveryFilter) (int64, error) {
	return s.Store().CountMatching(ctx, f)
}

// Pulse is every delivery's state in brief, for the signals a dashboard
// shows outside its page: how many deliveries wait for a person and how
// many are active, and a Version that changes whenever any delivery
// changes (a list or board showing an older one is stale).
type Pulse struct {
	Waiting int64  `json:"waiting"`
	Active  int64  `json:"active"`
	Version string `json:"version"`
}

// Pulse reads the deliveries' pulse.
func (s *Service) Pulse(ctx context.Context) (Pulse, error) {
	var p Pulse
	counts, err := s.Store().CountStates(ctx)
	if err != nil {
		return p, err
	}
	var total int64
	for k, c := range counts {
		total += c
		if k.Phase != baton.PhaseClose {
			p.Active += c
		}
		if (&baton.Delivery{Phase: k.Phase, RunStatus: k.Status, Queued: k.Queued}).WaitsForPerson() {
			p.Waiting += c
		}
	}
	last, err := s.Store().LastUpdated(ctx)
	if err != nil {
		return p, err
	}
	p.Version = fmt.Sprintf("%d.%d", total, last.UnixNano())
	return p, nil
}

// BoardColumn is one phase of a board: how many deliveries are in it,
// how many of those wait for a person, and the newest of them.
type BoardColumn struct {
	Phase      baton.Phase
	Count      int64
	Waiting    int64
	Deliveries []View
}

// Board returns a column per phase (intake excepted: it ends as soon as
// it begins) with the newest perColumn deliveries of each. A board of
// thousands of deliveries stays a page: the counts say the rest.
func (s *Service) Board(ctx context.Context, perColumn int) ([]BoardColumn, error) {
	counts, err := s.Store().CountStates(ctx)
	if err != nil {
		return nil, err
	}
	var out []BoardColumn
	for _, p := range baton.Phases {
		if p == baton.PhaseIntake {
			continue
		}
		col := BoardColumn{Phase: p}
		for k, n := range counts {
			if k.Phase != p {
				continue
			}
			col.Count += n
			if (&baton.Delivery{Phase: k.Phase, RunStatus: k.Status, Queued: k.Queued}).WaitsForPerson() {
				col.Waiting += n
			}
		}
		if col.Count > 0 {
			// Those waiting for a person first, the longest waiting
			// first; then the newest of the rest.
			ds, err := s.List(ctx, baton.DeliveryFilter{Phase: p, Waiting: true, Limit: perColumn})
			if err != nil {
				return nil, err
			}
			if len(ds) < perColumn {
				rest, err := s.List(ctx, baton.DeliveryFilter{Phase: p, Limit: perColumn})
				if err != nil {
					return nil, err
				}
				for _, d := range rest {
					if len(ds) < perColumn && !d.WaitsForPerson() {
						ds = append(ds, d)
					}
				}
			}
			col.Deliveries = NewListItems(ds)
		}
		out = append(out, col)
	}
	return out, nil
}
