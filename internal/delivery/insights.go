package delivery

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// How the team is doing: figures over the deliveries created in a
// window, each counted with its outcome as it stands now (a cohort: a
// delivery created in the window and merged after it counts as merged).

// MaxInsightsWindow bounds a window: a year of days to chart.
const MaxInsightsWindow = 366 * 24 * time.Hour

// Figures are what a set of deliveries did.
type Figures struct {
	// Created counts them all; the outcomes split them: Merged (deploy
	// succeeded: merged, or deployed by its command), Failed (a phase
	// failed and waits for a retry), Canceled (a person canceled the
	// phase), Closed (closed without landing), Open (the rest: running
	// or waiting).
	Created  int `json:"created"`
	Merged   int `json:"merged"`
	Failed   int `json:"failed"`
	Canceled int `json:"canceled"`
	Closed   int `json:"closed"`
	Open     int `json:"open"`
	// MergeSeconds are the times from creation to merge of the merged
	// ones: median and mean (0 when none merged).
	MedianMergeSeconds float64 `json:"median_merge_seconds"`
	MeanMergeSeconds   float64 `json:"mean_merge_seconds"`
	// The time of all of them, from plan to deploy: agents or commands
	// working, waiting for a person (to start a phase or decide on its
	// result), and waiting for a worker.
	WorkSeconds   float64 `json:"work_seconds"`
	PersonSeconds float64 `json:"person_seconds"`
	QueueSeconds  float64 `json:"queue_seconds"`
	// What the agents reported spending, on all of them and on the
	// merged ones, and the latter per merged delivery.
	CostUSD          float64 `json:"cost_usd"`
	Tokens           int64   `json:"tokens"`
	MergedCostUSD    float64 `json:"merged_cost_usd"`
	MergedTokens     int64   `json:"merged_tokens"`
	CostPerMergedUSD float64 `json:"cost_per_merged_usd"`
	TokensPerMerged  float64 `json:"tokens_per_merged"`
	mergeTimes       []float64
}

// Group is the figures of the deliveries of one agent or repository.
type Group struct {
	Name string `json:"name"`
	Figures
}

// Day is what happened on one UTC day of the window: deliveries
// created, and merged (of those the window holds).
type Day struct {
	Date    string `json:"date"` // 2006-01-02
	Created int    `json:"created"`
	Merged  int    `json:"merged"`
}

// Insights are the figures of the deliveries created in [Since, Until).
type Insights struct {
	Since        time.Time `json:"since"`
	Until        time.Time `json:"until"`
	Total        Figures   `json:"total"`
	ByAgent      []Group   `json:"by_agent"`
	ByRepository []Group   `json:"by_repository"`
	Days         []Day     `json:"days"`
}

// Insights reads the figures of the deliveries created in [since,
// until): a zero until is now, a zero since 30 days before until.
func (s *Service) Insights(ctx context.Context, since, until time.Time) (*Insights, error) {
	now := s.now()
	if until.IsZero() || until.After(now) {
		until = now
	}
	if since.IsZero() {
		since = until.Add(-30 * 24 * time.Hour)
	}
	switch {
	case !since.Before(until):
		return nil, baton.Errorf(baton.Invalid, "the window starts %s, not before its end %s: give an earlier start", since.UTC().Format(time.DateOnly), until.UTC().Format(time.DateOnly))
	case until.Sub(since) > MaxInsightsWindow:
		return nil, baton.Errorf(baton.Invalid, "the window is %d days, over a year: give a shorter one", int(until.Sub(since).Hours()/24))
	}
	recs, err := s.Store().DeliveriesCreated(ctx, since, until)
	if err != nil {
		return nil, err
	}
	in := &Insights{Since: since.UTC(), Until: until.UTC()}
	agents, repos := map[string]*Figures{}, map[string]*Figures{}
	days := map[string]*Day{}
	for d := since.UTC().Truncate(24 * time.Hour); d.Before(until); d = d.Add(24 * time.Hour) {
		day := &Day{Date: d.Format(time.DateOnly)}
		days[day.Date] = day
		in.Days = append(in.Days, Day{Date: day.Date})
	}
	for _, r := range recs {
		f := measure(r, now)
		for _, into := range []*Figures{&in.Total, group(agents, r.Delivery.Config.Agent), group(repos, r.Delivery.Repository)} {
			into.add(f)
		}
		if day := days[r.Delivery.CreatedAt.UTC().Format(time.DateOnly)]; day != nil {
			day.Created++
		}
		if at, ok := mergedAt(r.Log); ok {
			if day := days[at.UTC().Format(time.DateOnly)]; day != nil {
				day.Merged++
			}
		}
	}
	for i := range in.Days {
		in.Days[i] = *days[in.Days[i].Date]
	}
	in.Total.finish()
	in.ByAgent, in.ByRepository = groups(agents), groups(repos)
	return in, nil
}

func group(m map[string]*Figures, name string) *Figures {
	if m[name] == nil {
		m[name] = &Figures{}
	}
	return m[name]
}

// groups lists m's figures by name, the most deliveries first.
func groups(m map[string]*Figures) []Group {
	out := make([]Group, 0, len(m))
	for name, f := range m {
		f.finish()
		out = append(out, Group{Name: name, Figures: *f})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Created != out[j].Created {
			return out[i].Created > out[j].Created
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// measure is the figures of one delivery, at now.
func measure(r sqlstore.DeliveryRecord, now time.Time) Figures {
	d := r.Delivery
	f := Figures{Created: 1, CostUSD: r.CostUSD, Tokens: r.InputTokens + r.OutputTokens}
	at, merged := mergedAt(r.Log)
	switch {
	case merged:
		f.Merged = 1
		f.MergedCostUSD, f.MergedTokens = f.CostUSD, f.Tokens
		f.mergeTimes = []float64{max(0, at.Sub(d.CreatedAt).Seconds())}
	case d.Canceled:
		f.Canceled = 1
	case d.Phase == baton.PhaseClose:
		f.Closed = 1
	case d.RunStatus == baton.StatusFailed:
		f.Failed = 1
	default:
		f.Open = 1
	}
	for _, st := range Timeline(r.Log, now) {
		if st.Phase == string(baton.PhaseClose) || st.Phase == string(baton.PhaseObserve) {
			continue // after the work: watching what landed, or the end
		}
		f.WorkSeconds += st.WorkSeconds
		f.PersonSeconds += st.PersonSeconds
		f.QueueSeconds += st.QueueSeconds
	}
	return f
}

// mergedAt is when the delivery's deploy first succeeded.
func mergedAt(log []baton.PhaseLogEntry) (time.Time, bool) {
	for _, e := range log {
		if e.Phase == baton.PhaseDeploy && e.Status == baton.StatusSucceeded {
			return e.StartedAt, true
		}
	}
	return time.Time{}, false
}

func (f *Figures) add(o Figures) {
	f.Created += o.Created
	f.Merged += o.Merged
	f.Failed += o.Failed
	f.Canceled += o.Canceled
	f.Closed += o.Closed
	f.Open += o.Open
	f.WorkSeconds += o.WorkSeconds
	f.PersonSeconds += o.PersonSeconds
	f.QueueSeconds += o.QueueSeconds
	f.CostUSD += o.CostUSD
	f.Tokens += o.Tokens
	f.MergedCostUSD += o.MergedCostUSD
	f.MergedTokens += o.MergedTokens
	f.mergeTimes = append(f.mergeTimes, o.mergeTimes...)
}

// finish computes the figures made of the others.
func (f *Figures) finish() {
	if f.Merged == 0 {
		return
	}
	f.CostPerMergedUSD = f.MergedCostUSD / float64(f.Merged)
	f.TokensPerMerged = float64(f.MergedTokens) / float64(f.Merged)
	ts := slices.Clone(f.mergeTimes)
	slices.Sort(ts)
	sum := 0.0
	for _, t := range ts {
		sum += t
	}
	f.MeanMergeSeconds = sum / float64(len(ts))
	if n := len(ts); n%2 == 1 {
		f.MedianMergeSeconds = ts[n/2]
	} else {
		f.MedianMergeSeconds = (ts[n/2-1] + ts[n/2]) / 2
	}
}
