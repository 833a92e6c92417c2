// Command scalebench measures the context store at monorepo scale: every
// hook and store command as a whole process, and the MCP server's calls
// over stdio, in a small project (1×) and in a large one (a git repository
// of 100,000 tracked and 20,000 untracked files, 10,000 packets, 200 loops
// and a 500,000-line relevant-files log, never compacted), beside /bin/true
// and, round by round, a Go program that does nothing (-noop). It prints a
// markdown table with each call's growth from small to large. The projects are generated once (bench/scalegen) into
// ${XDG_CACHE_HOME:-~/.cache}/baton-bench and reused; each run starts from
// the store as generated, without an index.
//
// With -floor (bench/statefloor), a row times what a stop the loop blocks
// cannot avoid: the foreground loop's file replaced durably.
//
//	go run ./bench/scalebench -baton /path/to/baton [-hook baton-hook] [-noop noop] [-floor statefloor] [-n 40] [-idle 60s] [-git]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/bench/mcpstdio"
	"github.com/baton-agent/baton/bench/proctime"
	"github.com/baton-agent/baton/bench/scalegen"
	"github.com/baton-agent/baton/internal/fsstore"
)

func main() {
	bin := flag.String("baton", "", "the baton binary to measure")
	hookBin := flag.String("hook", "", "the baton-hook binary hooks run through, as baton install sets them up (default: baton hook)")
	noop := flag.String("noop", "", "a static Go program that does nothing (bench/noop), timed round by round beside each process (default: none)")
	floor := flag.String("floor", "", "bench/statefloor, timed as the floor of a blocking stop (default: not timed)")
	before := flag.String("before", "", "an earlier build of baton-hook, timed beside -hook in the same rounds, for before → after in one run (default: none)")
	beforeFirst := flag.Bool("before-first", false, "with -before, run the earlier build first in each round (a position in the round can move a build by several per cent: run both orders)")
	n := flag.Int("n", 40, "runs per call and scale")
	idle := flag.Duration("idle", 60*time.Second, "how long to watch the idle MCP server's CPU (0 skips it)")
	cache := flag.String("cache", "", "where generated projects are kept (default ${XDG_CACHE_HOME:-~/.cache}/baton-bench)")
	only := flag.String("only", "", "comma-separated calls to run (default all), by the start of their name")
	gitCosts := flag.Bool("git", false, "also time the git commands a handoff could run, at each scale")
	scales := flag.String("scales", "small,large", "which projects: small, large or both")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: scalebench -baton PATH")
		os.Exit(2)
	}
	abs, err := filepath.Abs(*bin)
	check(err)
	*bin = abs
	if *hookBin != "" {
		*hookBin, err = filepath.Abs(*hookBin)
		check(err)
	}
	if *noop != "" {
		*noop, err = filepath.Abs(*noop)
		check(err)
	}
	if *floor != "" {
		*floor, err = filepath.Abs(*floor)
		check(err)
	}
	if *before != "" {
		if *hookBin == "" {
			check(errors.New("-before needs -hook: the build it is compared with"))
		}
		*before, err = filepath.Abs(*before)
		check(err)
	}
	if *cache == "" {
		*cache, err = scalegen.DefaultCacheDir()
		check(err)
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "scalebench: "+f+"\n", a...) }

	var results []*result
	var idles []string
	var gits [][]gitCost
	for _, name := range strings.Split(*scales, ",") {
		spec := map[string]scalegen.Spec{"small": scalegen.Small, "large": scalegen.Large}[name]
		if spec.Name == "" {
			check(fmt.Errorf("no scale %q: give small, large or both", name))
		}
		in, err := scalegen.Cached(*cache, spec, logf)
		check(err)
		check(in.Reset())
		b := &bench{bin: *bin, hook: *hookBin, before: *before, beforeFirst: *beforeFirst, noop: *noop, floor: *floor, repo: in.Repo(), n: *n, logf: logf}
		for _, c := range b.calls() {
			if !selected(*only, c.name) {
				continue
			}
			logf("%s: %s", spec.Name, c.name)
			st, err := c.measure(b)
			if errors.Is(err, errSkip) {
				continue
			}
			check(err)
			find(&results, c).at[spec.Name] = st
			if st.before != nil {
				find(&results, call{name: c.name + ", before (-before)"}).at[spec.Name] = *st.before
			}
		}
		if *idle > 0 && selected(*only, "MCP server idle") {
			cpu, err := b.idleCPU(*idle)
			check(err)
			idles = append(idles, fmt.Sprintf("| %s | %s | %.3f %% of a core |", spec.Name, idle.String(), cpu))
		}
		if *gitCosts {
			gits = append(gits, b.gitCosts(spec.Name))
		}
	}
	printTable(results)
	if len(idles) > 0 {
		fmt.Println()
		fmt.Println("| MCP server idle, after listing resources | watched | CPU (goal < 0.1 % of a core) |")
		fmt.Println("|---|---:|---:|")
		for _, l := range idles {
			fmt.Println(l)
		}
	}
	if len(gits) > 0 {
		printGit(gits)
	}
}

// errSkip is a call's measure saying it has nothing to time in this run.
var errSkip = errors.New("skipped")

func selected(only, name string) bool {
	if only == "" {
		return true
	}
	for _, o := range strings.Split(only, ",") {
		if strings.HasPrefix(name, strings.TrimSpace(o)) {
			return true
		}
	}
	return false
}

// bench runs calls in one project.
type bench struct {
	bin, repo string
	hook      string // baton-hook, or "" for baton hook
	before    string // an earlier baton-hook timed beside hook, or ""
	// beforeFirst runs before first in each round, hook second.
	beforeFirst bool
	noop        string // the do-nothing Go program, or "" to time none
	floor       string // bench/statefloor, or "" to time none
	n           int
	logf        func(string, ...any)
}

// measure times r as a whole process, alternating round by round with the
// do-nothing Go program when there is one, so their ratio holds on a
// machine whose load changes.
func (b *bench) measure(r proctime.Run) (stats, error) {
	if b.noop == "" || r.N == 1 {
		st, err := proctime.Measure(r)
		return stats{Stats: st}, err
	}
	both, err := proctime.Alternate(r, proctime.Run{Argv: []string{b.noop}, Dir: os.TempDir(), N: r.N})
	if err != nil {
		return stats{}, err
	}
	return stats{Stats: both[0], noop: both[1].Median}, nil
}

// measureBeside is measure with other, an earlier build doing the same,
// timed in the same rounds: its stats are st.before.
func (b *bench) measureBeside(r, other proctime.Run) (stats, error) {
	runs := []proctime.Run{r, other}
	if b.beforeFirst {
		runs = []proctime.Run{other, r}
	}
	if b.noop != "" {
		runs = append(runs, proctime.Run{Argv: []string{b.noop}, Dir: os.TempDir(), N: r.N})
	}
	all, err := proctime.Alternate(runs...)
	if err != nil {
		return stats{}, err
	}
	if b.beforeFirst {
		all[0], all[1] = all[1], all[0]
	}
	st, was := stats{Stats: all[0]}, stats{Stats: all[1]}
	if b.noop != "" {
		st.noop, was.noop = all[2].Median, all[2].Median
	}
	st.before = &was
	return st, nil
}

// stats is a call's timings and the do-nothing program's median of the
// same rounds (0 when not timed); before, the earlier build's (-before).
type stats struct {
	proctime.Stats
	noop   time.Duration
	before *stats
}

// call is one thing measured: a whole process, or one MCP request in a
// fresh server.
type call struct {
	name    string
	goal    string
	measure func(b *bench) (stats, error)
}

type result struct {
	call
	at map[string]stats
}

func find(rs *[]*result, c call) *result {
	for _, r := range *rs {
		if r.name == c.name {
			return r
		}
	}
	r := &result{call: c, at: map[string]stats{}}
	*rs = append(*rs, r)
	return r
}

// calls lists what is measured, in order: the first calls after a
// checkout (no index yet), reads, then writes (which grow the store).
func (b *bench) calls() []call {
	tracked := filepath.Join(b.repo, "services/svc000/pkg00/file000.go")
	hook := func(name, event, goal string, payload map[string]any, check func([]byte) error) call {
		payload["session_id"] = scalegen.Session
		payload["cwd"] = b.repo
		in, _ := json.Marshal(payload)
		return call{name, goal, func(b *bench) (stats, error) {
			argv := []string{b.bin, "hook", event, "--harness", "claude"}
			if b.hook != "" {
				argv = []string{b.hook, event, "--harness", "claude"}
			}
			r := proctime.Run{Argv: argv, Stdin: in, N: b.n,
				Dir: os.TempDir(), Check: check} // a harness runs hooks from anywhere: the payload names the project
			if b.before != "" && b.n > 1 {
				other := r
				other.Argv = append([]string{b.before}, argv[1:]...)
				return b.measureBeside(r, other)
			}
			return b.measure(r)
		}}
	}
	cmd := func(name, goal string, args ...string) call {
		return call{name, goal, func(b *bench) (stats, error) {
			return b.measure(proctime.Run{Argv: append([]string{b.bin}, args...), Dir: b.repo, N: b.n})
		}}
	}
	once := func(c call) call {
		c.measure = func(m func(*bench) (stats, error)) func(*bench) (stats, error) {
			return func(b *bench) (stats, error) { nb := *b; nb.n = 1; return m(&nb) }
		}(c.measure)
		return c
	}
	body := filepath.Join(os.TempDir(), "scalebench-body.md")
	check(os.WriteFile(body, []byte("## Intent\nShip it.\n\n## Next Prompt\nRun the tests.\n"), 0o644))
	// handoff writes a packet, untimed: what a search right after a write
	// follows in the same round.
	handoff := func() error {
		c := exec.Command(b.bin, "handoff", "bench", "--body", body)
		c.Dir = b.repo
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("handoff: %v\n%s", err, out)
		}
		return nil
	}
	const query = "gateway ledger"
	hits := func(out []byte) error {
		if !bytes.Contains(out, []byte("packet")) {
			return fmt.Errorf("the search found no packet: %s", out)
		}
		return nil
	}
	blocks := func(out []byte) error {
		if !bytes.Contains(out, []byte(`"decision":"block"`)) {
			return fmt.Errorf("the stop did not block: %s", out)
		}
		return nil
	}
	return []call{
		{"/bin/true", "", func(b *bench) (stats, error) {
			st, err := proctime.Measure(proctime.Run{Argv: []string{"/bin/true"}, Dir: b.repo, N: b.n})
			return stats{Stats: st}, err
		}},
		once(cmd("first `packet list` after a checkout (builds the index)", "", "packet", "list")),
		// The reads run over the log as generated: never compacted, the
		// last session's touches after the newest packet.
		hook("hook session-start", "session-start", "< 10 ms", map[string]any{"source": "startup"}, nil),
		cmd("`pickup latest`", "< 20 ms", "pickup", "latest"),
		cmd("`packet list` (first page)", "< 20 ms", "packet", "list"),
		cmd("`loop list`", "< 20 ms", "loop", "list"),
		cmd("`files` (top 50)", "< 20 ms", "files", "--limit", "50"),
		b.mcpCall("MCP `packets`", `{"name":"packets","arguments":{}}`, "tools/call", nil),
		b.mcpCall("MCP `pickup`", `{"name":"pickup","arguments":{}}`, "tools/call", nil),
		b.mcpCall("MCP `files`", `{"name":"files","arguments":{}}`, "tools/call", nil),
		b.mcpCall("MCP `resources/list` (first page)", `{}`, "resources/list", nil),
		hook("hook post-tool-use (Write)", "post-tool-use", "< 10 ms", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": tracked, "content": "package pkg00\n"}}, nil),
		{"floor of a blocking stop: the loop file replaced durably (bench/statefloor)", "", func(b *bench) (stats, error) {
			if b.floor == "" {
				return stats{}, errSkip
			}
			st := fsstore.Open(b.repo, fsstore.Options{})
			id, err := st.ForegroundLoopID(scalegen.Session)
			if err != nil || id == "" {
				return stats{}, fmt.Errorf("no foreground loop of %s: %v", scalegen.Session, err)
			}
			path, err := st.LoopPath(id)
			if err != nil {
				return stats{}, err
			}
			fi, err := os.Stat(path)
			if err != nil {
				return stats{}, err
			}
			return b.measure(proctime.Run{Argv: []string{b.floor, filepath.Dir(path), strconv.FormatInt(fi.Size(), 10)}, Dir: os.TempDir(), N: b.n})
		}},
		hook("hook stop (loop blocks)", "stop", "< 10 ms", map[string]any{"last_assistant_message": "still working", "stop_hook_active": false}, blocks),
		hook("hook pre-compact (writes a packet)", "pre-compact", "< 10 ms", map[string]any{"trigger": "auto"}, nil),
		cmd("`handoff` end to end, fsync included", "< 30 ms", "handoff", "bench", "--body", body, "--validator", "go test ./..."),
		b.mcpCall("MCP `handoff`", `{"name":"handoff","arguments":{"purpose":"bench","next_prompt":"Run the tests."}}`, "tools/call", nil),
		{"`search \"" + query + "\"` (after a handoff in the same round)", "< 20 ms", func(b *bench) (stats, error) {
			return b.measure(proctime.Run{Argv: []string{b.bin, "search", query}, Dir: b.repo, N: b.n, Before: handoff, Check: hits})
		}},
		b.mcpCall("MCP `search` (after a handoff in the same round)", `{"name":"search","arguments":{"query":"`+query+`"}}`, "tools/call", handoff),
	}
}

// mcpCall times one request to a fresh `baton mcp` over stdio, from the
// request written to its answer read, after initialize: the first call a
// client makes, as a client makes it. before, when set, runs untimed
// before each server starts.
func (b *bench) mcpCall(name, params, method string, before func() error) call {
	return call{name, "< 20 ms", func(b *bench) (stats, error) {
		var ds []time.Duration
		for i := -1; i < b.n; i++ {
			if before != nil {
				if err := before(); err != nil {
					return stats{}, err
				}
			}
			s, err := mcpstdio.Start(b.bin, b.repo, "scalebench")
			if err != nil {
				return stats{}, err
			}
			t0 := time.Now()
			line, err := s.Request(method, params)
			d := time.Since(t0)
			s.Close()
			if err != nil {
				return stats{}, fmt.Errorf("%s: %w", name, err)
			}
			if mcpstdio.Failed(line) {
				return stats{}, fmt.Errorf("%s: the server answered an error: %.500s", name, line)
			}
			if i >= 0 {
				ds = append(ds, d)
			}
		}
		slices.Sort(ds)
		return stats{Stats: proctime.Stats{Runs: len(ds), Median: ds[len(ds)/2], P90: ds[len(ds)*9/10], Max: ds[len(ds)-1]}}, nil
	}}
}

// idleCPU starts a server, lists resources once (so it watches the
// store), and reports the CPU it uses over d while nothing happens, in
// percent of one core.
func (b *bench) idleCPU(d time.Duration) (float64, error) {
	b.logf("MCP server idle for %s", d)
	s, err := mcpstdio.Start(b.bin, b.repo, "scalebench")
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if _, err := s.Request("resources/list", `{}`); err != nil {
		return 0, err
	}
	before, err := cpuTime(s.Cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	time.Sleep(d) // the measurement itself: the server is left alone
	after, err := cpuTime(s.Cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return 100 * (after - before).Seconds() / time.Since(t0).Seconds(), nil
}

// cpuTime is a process's user and system time from /proc (in clock
// ticks of 10 ms).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

func printTable(rs []*result) {
	fmt.Println("| call | goal (median) | 1×: median | p90 | CPU | × do-nothing Go | large: median | p90 | CPU | × do-nothing Go | growth | CPU growth |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		s, hasS := r.at["small"]
		l, hasL := r.at["large"]
		cell := func(st stats, ok bool) (med, p90, cpu, ratio string) {
			if !ok {
				return
			}
			if st.noop > 0 {
				ratio = fmt.Sprintf("%.2f×", float64(st.Median)/float64(st.noop))
			}
			if st.CPU > 0 {
				cpu = proctime.MS(st.CPU)
			}
			if st.Runs == 1 {
				return proctime.MS(st.Median), "(once)", cpu, ratio
			}
			return proctime.MS(st.Median), proctime.MS(st.P90), cpu, ratio
		}
		sm, sp, sc, sr := cell(s, hasS)
		lm, lp, lc, lr := cell(l, hasL)
		growth, cpuGrowth := "", ""
		if hasS && hasL && s.Median > 0 {
			growth = fmt.Sprintf("%.2f×", float64(l.Median)/float64(s.Median))
		}
		if hasS && hasL && s.CPU > 0 {
			cpuGrowth = fmt.Sprintf("%.2f×", float64(l.CPU)/float64(s.CPU))
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, r.goal, sm, sp, sc, sr, lm, lp, lc, lr, growth, cpuGrowth)
	}
}

// gitCost is one git command a handoff could run, timed in a project.
type gitCost struct {
	scale, name string
	st          proctime.Stats
}

// gitCosts times the ways to learn a work tree's state, so the choice
// in internal/gitx rests on numbers.
func (b *bench) gitCosts(scale string) []gitCost {
	files := "services/svc000/pkg00/file000.go\nservices/svc000/pkg00/file001.go\nservices/svc000/pkg00/file002.go\n"
	cmds := []struct {
		name  string
		argv  []string
		stdin string
	}{
		{"git status --porcelain=v2 --branch -z --untracked-files=all", []string{"git", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"}, ""},
		{"git status --porcelain=v2 --branch -z --untracked-files=no", []string{"git", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=no"}, ""},
		{"git diff-index --quiet HEAD", []string{"git", "diff-index", "--quiet", "HEAD", "--"}, ""},
		{"git log -1 --format=%H%x00%s HEAD", []string{"git", "log", "-1", "--format=%H%x00%s", "HEAD"}, ""},
		{"git cat-file --batch-check (3 paths at HEAD)", []string{"git", "cat-file", "--batch-check"}, strings.ReplaceAll("HEAD:"+strings.TrimSuffix(files, "\n"), "\n", "\nHEAD:") + "\n"},
		{"git hash-object --stdin-paths (3 paths)", []string{"git", "hash-object", "--stdin-paths"}, files},
	}
	var out []gitCost
	for _, c := range cmds {
		b.logf("%s: %s", scale, c.name)
		var in []byte
		if c.stdin != "" {
			in = []byte(c.stdin)
		}
		st, err := proctime.Measure(proctime.Run{Argv: c.argv, Stdin: in, Dir: b.repo, N: max(b.n/4, 5), AllowFail: true})
		check(err)
		out = append(out, gitCost{scale, c.name, st})
	}
	return out
}

func printGit(all [][]gitCost) {
	fmt.Println()
	fmt.Println("| git command | scale | median | p90 |")
	fmt.Println("|---|---|---:|---:|")
	for _, cs := range all {
		for _, c := range cs {
			fmt.Printf("| `%s` | %s | %s | %s |\n", c.name, c.scale, proctime.MS(c.st.Median), proctime.MS(c.st.P90))
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}
