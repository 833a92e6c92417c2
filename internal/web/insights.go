package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
)

// The insights page, /api/insights and the insights metrics: how the
// team is doing over a window (delivery.Insights).

// insightsWindow reads a window from a query: days=N (the last N days,
// 1 to 366, 30 when nothing is given), or since and until, UTC dates
// (2006-01-02) both included.
func insightsWindow(q url.Values, now time.Time) (since, until time.Time, err error) {
	s, u, days := q.Get("since"), q.Get("until"), q.Get("days")
	if s == "" && u == "" {
		n := 30
		if days != "" {
			if n, err = strconv.Atoi(days); err != nil || n < 1 || n > 366 {
				return since, until, baton.Errorf(baton.Invalid, "days=%s: want a number of days from 1 to 366", baton.Truncate(days, 20, "…"))
			}
		}
		return now.Add(-time.Duration(n) * 24 * time.Hour), now, nil
	}
	if days != "" {
		return since, until, baton.Errorf(baton.Invalid, "give days, or since and until, not both")
	}
	date := func(name, v string) (time.Time, error) {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return t, baton.Errorf(baton.Invalid, "%s=%s: want a date as 2006-01-02", name, baton.Truncate(v, 20, "…"))
		}
		return t, nil
	}
	if s == "" {
		return since, until, baton.Errorf(baton.Invalid, "until without since: give the first day too (since=2006-01-02)")
	}
	if since, err = date("since", s); err != nil {
		return
	}
	until = now
	if u != "" {
		if until, err = date("until", u); err != nil {
			return
		}
		until = until.Add(24 * time.Hour) // the whole last day
	}
	return since, until, nil
}

func (s *Server) insights(r *http.Request) (*delivery.Insights, error) {
	since, until, err := insightsWindow(r.URL.Query(), time.Now().UTC())
	if err != nil {
		return nil, err
	}
	return s.Deliveries.Insights(r.Context(), since, until)
}

func (s *Server) getInsights(w http.ResponseWriter, r *http.Request) error {
	in, err := s.insights(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, in)
	return nil
}

type insightsPage struct {
	pageData
	In *delivery.Insights
	// Days is the window's length when it is one of the offered ones;
	// Since and Until are its first and last day.
	Days         int
	Since, Until string
	// Charts are drawn here, with their tables.
	PerDay   barChart
	Outcomes []outcomeBar
	Time     []timeBar
	Tables   []groupTable
	Windows  []int
	// PersonShare is the share of the time spent waiting for a person.
	PersonShare string
}

// groupTable is the figures per agent or per repository.
type groupTable struct {
	ID, Title, Col string
	Groups         []delivery.Group
}

func (s *Server) pageInsights(w http.ResponseWriter, r *http.Request) error {
	p := insightsPage{pageData: s.page(r, "Insights", "insights")}
	in, err := s.insights(r)
	if err != nil {
		if baton.ErrorCode(err) != baton.Invalid {
			return err
		}
		// The form again, with why the window was refused.
		_, p.Error = classify(err)
		in, err = s.Deliveries.Insights(r.Context(), time.Time{}, time.Time{})
		if err != nil {
			return err
		}
	}
	p.In = in
	p.Since, p.Until = in.Since.Format(time.DateOnly), in.Until.Add(-time.Nanosecond).Format(time.DateOnly)
	if d, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil {
		p.Days = d
	} else if r.URL.Query().Get("since") == "" {
		p.Days = 30
	}
	p.PerDay = perDayChart(in.Days)
	p.Outcomes = outcomeBars(in.Total)
	p.Time = timeBars(in.ByAgent)
	p.Tables = []groupTable{{"agents", "Per agent", "Agent", in.ByAgent}, {"repos", "Per repository", "Repository", in.ByRepository}}
	p.Windows = []int{7, 30, 90, 365}
	p.PersonShare = "—"
	if t := in.Total; t.WorkSeconds+t.PersonSeconds+t.QueueSeconds > 0 {
		p.PersonShare = fmt.Sprintf("%.0f%%", t.PersonSeconds/(t.WorkSeconds+t.PersonSeconds+t.QueueSeconds)*100)
	}
	return s.render(w, r, http.StatusOK, "insights", p)
}

// barChart is the deliveries created and merged per day, as bars of an
// SVG drawn on the server: its geometry in the SVG's own units.
type barChart struct {
	Width, Height int
	Bars          []dayBar
	Max           int
	Ticks         []tick
}

type dayBar struct {
	delivery.Day
	X, W                      float64
	CreatedY, CreatedH        float64
	MergedX, MergedY, MergedH float64
	Label                     string // the date, on some bars
	LabelX                    float64
}

type tick struct {
	Y     float64
	Value int
}

const chartHeight, chartBase = 160, 140 // the bars stand on y=chartBase

func perDayChart(days []delivery.Day) barChart {
	c := barChart{Width: 720, Height: chartHeight + 20, Max: 1}
	for _, d := range days {
		c.Max = max(c.Max, d.Created, d.Merged)
	}
	if len(days) == 0 {
		return c
	}
	slot := float64(c.Width-40) / float64(len(days))
	scale := func(n int) float64 { return float64(n) / float64(c.Max) * (chartBase - 10) }
	every := max(1, len(days)/6)
	for i, d := range days {
		x := 40 + float64(i)*slot
		b := dayBar{Day: d, X: x + slot*0.1, W: max(slot*0.4, 1)}
		b.CreatedH = scale(d.Created)
		b.CreatedY = chartBase - b.CreatedH
		b.MergedH = scale(d.Merged)
		b.MergedX, b.MergedY = b.X+b.W, chartBase-b.MergedH
		if i%every == 0 {
			b.Label, b.LabelX = d.Date[5:], x
		}
		c.Bars = append(c.Bars, b)
	}
	for _, v := range []int{0, c.Max / 2, c.Max} {
		c.Ticks = append(c.Ticks, tick{Y: chartBase - scale(v), Value: v})
	}
	return c
}

// outcomeBar is one outcome's share of the deliveries, as a segment of
// one stacked bar (X and W in percent of its width).
type outcomeBar struct {
	Name  string
	N     int
	X, W  float64
	Class string
}

func outcomeBars(f delivery.Figures) []outcomeBar {
	out := []outcomeBar{{Name: "merged", N: f.Merged, Class: "s-succeeded"}, {Name: "open", N: f.Open, Class: "s-pending"},
		{Name: "failed", N: f.Failed, Class: "s-failed"}, {Name: "canceled", N: f.Canceled, Class: "s-canceled"}, {Name: "closed", N: f.Closed, Class: "s-closed"}}
	x := 0.0
	for i := range out {
		if f.Created > 0 {
			out[i].W = float64(out[i].N) / float64(f.Created) * 100
		}
		out[i].X = x
		x += out[i].W
	}
	return out
}

// timeBar is where one agent's deliveries spent their time: working,
// waiting for a person, waiting for a worker, as segments of a bar (in
// percent of its width).
type timeBar struct {
	Name                   string
	Work, Person, Queue    float64 // seconds
	WorkW, PersonW, QueueW float64
	QueueX                 float64
}

func timeBars(groups []delivery.Group) []timeBar {
	var out []timeBar
	for _, g := range groups {
		b := timeBar{Name: g.Name, Work: g.WorkSeconds, Person: g.PersonSeconds, Queue: g.QueueSeconds}
		if all := b.Work + b.Person + b.Queue; all > 0 {
			b.WorkW, b.PersonW, b.QueueW = b.Work/all*100, b.Person/all*100, b.Queue/all*100
			b.QueueX = b.WorkW + b.PersonW
		}
		out = append(out, b)
	}
	return out
}

// insightsMetrics serves the insights as Prometheus gauges, over the
// last 30 days, read once per scrape (each family asks).
type insightsMetrics struct {
	svc *delivery.Service
	mu  sync.Mutex
	at  time.Time
	in  *delivery.Insights
	err error
}

// read returns the insights read within the last second, or reads them.
func (m *insightsMetrics) read(ctx context.Context) (*delivery.Insights, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now := time.Now(); m.in == nil || now.Sub(m.at) > time.Second {
		m.in, m.err = m.svc.Insights(ctx, time.Time{}, time.Time{})
		m.at = now
	}
	return m.in, m.err
}

// each calls f with the window's figures: all of them (group "all"),
// then per agent and per repository.
func (m *insightsMetrics) each(ctx context.Context, f func(group, name string, fig delivery.Figures)) error {
	in, err := m.read(ctx)
	if err != nil {
		return err
	}
	f("all", "", in.Total)
	for _, g := range in.ByAgent {
		f("agent", g.Name, g.Figures)
	}
	for _, g := range in.ByRepository {
		f("repository", g.Name, g.Figures)
	}
	return nil
}

func (s *Server) registerInsightsMetrics() {
	m := &insightsMetrics{svc: s.Deliveries}
	family := func(name, help string, extra string, values func(fig delivery.Figures) []sample) {
		s.Metrics.Collected(name, help+" Over the deliveries created in the last 30 days, as /api/insights?days=30 gives them.", typeGauge,
			[]string{"group", "name", extra}, func(ctx context.Context, emit func(float64, ...string)) error {
				return m.each(ctx, func(group, name string, fig delivery.Figures) {
					for _, v := range values(fig) {
						emit(v.value, group, name, v.label)
					}
				})
			})
	}
	family("baton_insights_deliveries", "Deliveries by outcome (created counts them all).", "outcome", func(f delivery.Figures) []sample {
		return []sample{{"created", float64(f.Created)}, {"merged", float64(f.Merged)}, {"failed", float64(f.Failed)}, {"canceled", float64(f.Canceled)}, {"closed", float64(f.Closed)}, {"open", float64(f.Open)}}
	})
	family("baton_insights_merge_seconds", "Time from creation to merge of the merged deliveries.", "stat", func(f delivery.Figures) []sample {
		return []sample{{"median", f.MedianMergeSeconds}, {"mean", f.MeanMergeSeconds}}
	})
	family("baton_insights_seconds", "Time spent from plan to deploy: agents or commands working, waiting for a person, waiting for a worker.", "kind", func(f delivery.Figures) []sample {
		return []sample{{"work", f.WorkSeconds}, {"person", f.PersonSeconds}, {"queue", f.QueueSeconds}}
	})
	family("baton_insights_cost_usd", "Agent cost as the agents report it: of all deliveries, of the merged ones, per merged delivery.", "of", func(f delivery.Figures) []sample {
		return []sample{{"all", f.CostUSD}, {"merged", f.MergedCostUSD}, {"per_merged", f.CostPerMergedUSD}}
	})
	family("baton_insights_tokens", "Agent tokens (input and output): of all deliveries, of the merged ones, per merged delivery.", "of", func(f delivery.Figures) []sample {
		return []sample{{"all", float64(f.Tokens)}, {"merged", float64(f.MergedTokens)}, {"per_merged", f.TokensPerMerged}}
	})
}

// sample is one value of a metric family, its label naming it.
type sample struct {
	label string
	value float64
}
