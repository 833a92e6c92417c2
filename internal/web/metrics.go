package web

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Metrics is the server's Prometheus registry, written in the Prometheus
// text exposition format (version 0.0.4).
//
// It is baton's own rather than github.com/prometheus/client_golang: that
// package registers its default collectors in init(), which ran on every
// baton process, hooks included, and cost about 1.2 ms per process start
// (docs/benchmarks.md). Nothing here runs before `baton serve` builds it.
type Metrics struct {
	mu         sync.Mutex
	families   []*family
	collectors []func(ctx context.Context)
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics { return &Metrics{} }

type metricType string

const (
	typeCounter   metricType = "counter"
	typeGauge     metricType = "gauge"
	typeHistogram metricType = "histogram"
)

// family is one metric name with its help, type and label names.
type family struct {
	name, help string
	typ        metricType
	labels     []string
	buckets    []float64 // histograms

	mu     sync.Mutex
	series map[string]*series // by joined label values
	// collected families are produced at scrape time by a collector.
	collected bool
}

type series struct {
	values []string
	value  float64
	counts []uint64 // histogram: per bucket, not cumulative
	sum    float64
	count  uint64
}

func (m *Metrics) add(f *family) *family {
	f.series = map[string]*series{}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.families = append(m.families, f)
	return f
}

// Counter is a monotonically increasing value per label set.
type Counter struct{ f *family }

// NewCounter registers a counter.
func (m *Metrics) NewCounter(name, help string, labels ...string) Counter {
	return Counter{m.add(&family{name: name, help: help, typ: typeCounter, labels: labels})}
}

// Add adds v (>= 0) to the series of labels.
func (c Counter) Add(v float64, labels ...string) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.get(labels).value += v
}

// Histogram counts observations into cumulative buckets per label set.
type Histogram struct{ f *family }

// NewHistogram registers a histogram with upper bounds buckets
// (ascending; +Inf is implied).
func (m *Metrics) NewHistogram(name, help string, buckets []float64, labels ...string) Histogram {
	return Histogram{m.add(&family{name: name, help: help, typ: typeHistogram, labels: labels, buckets: slices.Clone(buckets)})}
}

// Observe records v in the series of labels.
func (h Histogram) Observe(v float64, labels ...string) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	s := h.f.get(labels)
	if s.counts == nil {
		s.counts = make([]uint64, len(h.f.buckets))
	}
	if i := sort.SearchFloat64s(h.f.buckets, v); i < len(h.f.buckets) {
		s.counts[i]++
	}
	s.sum += v
	s.count++
}

// Collected registers a family whose series are read at scrape time by
// collect (for values the database holds, such as deliveries by phase).
func (m *Metrics) Collected(name, help string, typ metricType, labels []string, collect func(ctx context.Context, emit func(value float64, labels ...string)) error) {
	f := m.add(&family{name: name, help: help, typ: typ, labels: labels, collected: true})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.collectors = append(m.collectors, func(ctx context.Context) {
		f.mu.Lock()
		f.series = map[string]*series{}
		f.mu.Unlock()
		_ = collect(ctx, func(v float64, labels ...string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.get(labels).value = v
		})
	})
}

func (f *family) get(labels []string) *series {
	if len(labels) != len(f.labels) {
		panic(fmt.Sprintf("metric %s: %d label values for %d labels", f.name, len(labels), len(f.labels)))
	}
	k := strings.Join(labels, "\xff")
	s := f.series[k]
	if s == nil {
		s = &series{values: slices.Clone(labels)}
		f.series[k] = s
	}
	return s
}

// Write runs the collectors and writes every family in the text format.
func (m *Metrics) Write(ctx context.Context, w io.Writer) error {
	m.mu.Lock()
	fams, cols := slices.Clone(m.families), slices.Clone(m.collectors)
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, c := range cols {
		c(ctx)
	}
	var b strings.Builder
	for _, f := range fams {
		f.write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (f *family) write(b *strings.Builder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
	keys := make([]string, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := f.series[k]
		if f.typ != typeHistogram {
			fmt.Fprintf(b, "%s%s %s\n", f.name, labelText(f.labels, s.values, "", ""), num(s.value))
			continue
		}
		var cum uint64
		for i, ub := range f.buckets {
			cum += s.counts[i]
			fmt.Fprintf(b, "%s_bucket%s %d\n", f.name, labelText(f.labels, s.values, "le", num(ub)), cum)
		}
		fmt.Fprintf(b, "%s_bucket%s %d\n", f.name, labelText(f.labels, s.values, "le", "+Inf"), s.count)
		fmt.Fprintf(b, "%s_sum%s %s\n", f.name, labelText(f.labels, s.values, "", ""), num(s.sum))
		fmt.Fprintf(b, "%s_count%s %d\n", f.name, labelText(f.labels, s.values, "", ""), s.count)
	}
}

func labelText(names, values []string, extraName, extraValue string) string {
	if len(names) == 0 && extraName == "" {
		return ""
	}
	parts := make([]string, 0, len(names)+1)
	for i, n := range names {
		parts = append(parts, n+`="`+escapeLabel(values[i])+`"`)
	}
	if extraName != "" {
		parts = append(parts, extraName+`="`+extraValue+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func escapeHelp(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "\n", `\n`)
}

func escapeLabel(s string) string {
	return strings.ReplaceAll(escapeHelp(s), `"`, `\"`)
}
