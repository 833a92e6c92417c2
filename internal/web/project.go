package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/goaltree"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/safefile"
)

// Bounds of the project page: it reads files an agent wrote.
const (
	projectIterations = 50
	projectArtifacts  = 100
	guardLogBytes     = 64 << 10
	iterMetaBytes     = 256 << 10
)

// NewProject is the project at st, for the dashboard's read-only project
// page: its goal-tree run, packets and loops (as of now), read from the
// files as the commands left them, bounded (an agent wrote them). nil
// outside a project (st nil, or no store there).
func NewProject(st *fsstore.Store, now func() time.Time) *Project {
	if st == nil || st.Root() == "" || !st.Exists() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Project{Root: st.Root(), Load: func(ctx context.Context) (ProjectView, error) {
		return loadProject(st, now())
	}}
}

// loadProject reads the goal-tree run (tree, current node, the newest
// iterations with their guard logs), packets and loops.
func loadProject(st *fsstore.Store, now time.Time) (ProjectView, error) {
	v := ProjectView{Root: st.Root()}
	run, err := loadRunView(goaltree.Layout{Root: st.Root()})
	if err != nil {
		return v, err
	}
	v.Run = run
	packets, _, err := st.FindPackets(fsstore.PacketFilter{})
	if err != nil {
		return v, err
	}
	for _, p := range packets[:min(len(packets), projectArtifacts)] {
		v.Packets = append(v.Packets, ArtifactView{ID: p.ID, Status: string(p.Status), Purpose: p.Purpose})
	}
	fg, _ := st.Foreground() // unreadable: the loops are shown, none marked
	loops, _, err := loop.Views(st, fsstore.LoopFilter{}, fg, now)
	if err != nil {
		return v, err
	}
	v.Loops = loops[:min(len(loops), projectArtifacts)]
	return v, nil
}

// loadRunView returns nil when the project has no goal-tree run.
func loadRunView(l goaltree.Layout) (*RunView, error) {
	st, tree, err := l.LoadStateAndTree()
	if errors.Is(err, fs.ErrNotExist) || baton.ErrorCode(err) == baton.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sel := goaltree.Select(tree)
	c := goaltree.Count(tree)
	rv := &RunView{}
	current := ""
	switch n := sel.Node; {
	case n == nil:
		rv.Summary = fmt.Sprintf("Run %s is %s", st.RunID, sel.State)
	case sel.State == goaltree.Stuck:
		current = n.ID
		rv.Summary = fmt.Sprintf("Run %s is stuck on node %s %q (%d of %d attempts)", st.RunID, n.ID, n.Title, n.Attempts, n.MaxAttempts)
	default:
		current = n.ID
		rv.Summary = fmt.Sprintf("Run %s: current node %s %q (attempt %d of %d)", st.RunID, n.ID, n.Title, n.Attempts+1, n.MaxAttempts)
	}
	rv.Summary += fmt.Sprintf("; leaves: %d passed, %d open, %d stuck of %d; %d iterations.", c.Passed, c.Open, c.Stuck, c.Leaves, st.Totals.Iterations)
	rv.Tree = goaltree.Summary(tree, current, goaltree.DefaultSummaryNodes)
	rv.Iterations, err = loadIterations(l, st.RunID)
	return rv, err
}

// loadIterations reads the newest iterations' meta.json and guard.log,
// newest first.
func loadIterations(l goaltree.Layout, runID string) ([]IterationView, error) {
	dir := filepath.Dir(l.Iteration(runID, 1))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var nums []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && n > 0 {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	slices.Reverse(nums)
	var out []IterationView
	for _, n := range nums[:min(len(nums), projectIterations)] {
		it := l.Iteration(runID, n)
		v := IterationView{Name: strconv.Itoa(n), Outcome: "in progress or interrupted"}
		if b, err := safefile.ReadFile(filepath.Join(it, goaltree.MetaLog), iterMetaBytes); err == nil {
			var m goaltree.Meta
			if json.Unmarshal(b, &m) == nil {
				v.Node = m.Node
				if m.Title != "" {
					v.Node += " " + m.Title
				}
				v.Outcome = fmt.Sprintf("status %s, guard %s", m.Status, m.Guard)
				if m.RunnerError != "" {
					v.Outcome += "; " + baton.Truncate(m.RunnerError, 200, "…")
				}
			}
		}
		v.GuardLog = tail(filepath.Join(it, goaltree.GuardLog), guardLogBytes)
		out = append(out, v)
	}
	return out, nil
}

// tail returns the last max bytes of a regular file, "" when it cannot
// be read.
func tail(path string, max int64) string {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	cut := ""
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return ""
		}
		cut = "… (earlier output cut)\n"
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return ""
	}
	return cut + string(b)
}
