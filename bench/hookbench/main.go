// Command hookbench measures baton's hooks as harnesses run them: a whole
// process per event, payload on stdin, timed from fork to exit, median of
// many runs, beside /bin/true measured in the same run. Three sections:
// an ordinary store; hostile stores (links to /dev/zero, FIFOs, huge
// files, links out of the store: one plant per project, the slowest case
// named at the end); and stops of one session on one loop started at once.
// Usage:
//
//	go run ./bench/hookbench -baton /path/to/baton [-hook /path/to/baton-hook] [-noop /path/to/a-do-nothing-go-program] [-floor /path/to/statefloor] [-n 300] [-concurrent 200 -rounds 5] [-only hostile]
//
// With -hook, the normal section also times each event through the
// companion binary baton-hook; with -noop, beside a Go program that does
// nothing, and each row says how many times that program's median it
// costs; with -floor (bench/statefloor), a stop the loop blocks is also
// timed beside a program that only replaces the loop file durably, what
// such a stop cannot avoid.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/bench/proctime"
)

func main() {
	bin := flag.String("baton", "", "the baton binary to measure")
	hookBin := flag.String("hook", "", "the baton-hook binary to measure beside it")
	noop := flag.String("noop", "", "a Go program that does nothing, the floor to compare with")
	floor := flag.String("floor", "", "bench/statefloor: the floor of a stop that writes the loop's state")
	n := flag.Int("n", 300, "runs per fast scenario")
	nBig := flag.Int("n-big", 60, "runs per 100 MB transcript scenario")
	conc := flag.Int("concurrent", 200, "stops started at once on one loop (0 skips it)")
	rounds := flag.Int("rounds", 5, "rounds of concurrent stops")
	only := flag.String("only", "", "run one section: normal, hostile or concurrent")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: hookbench -baton PATH")
		os.Exit(2)
	}
	if *only == "" || *only == "normal" {
		normal(*bin, *hookBin, *noop, *floor, *n, *nBig)
	}
	if *only == "" || *only == "hostile" {
		fmt.Println()
		hostile(*bin, *n)
	}
	if (*only == "" || *only == "concurrent") && *conc > 0 {
		fmt.Println()
		storm(*bin, *conc, *rounds)
	}
}

// normal times each hook on an ordinary store.
func normal(bin, hookBin, noop, floor string, n, nBig int) {
	dir, err := os.MkdirTemp("", "hookbench-*")
	check(err)
	defer os.RemoveAll(dir)
	check(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	run(exec.Command(bin, "--root", dir, "init"), nil)
	// An unbounded loop bound to the session, so every stop blocks and
	// writes the loop file (the common, slowest path of a stop).
	c := exec.Command(bin, "--root", dir, "loop", "start", "--max-iterations", "0", "keep going")
	c.Env = append(os.Environ(), "BATON_SESSION_ID=bench")
	run(c, nil)

	loops := filepath.Join(dir, ".agent", "context", "loops")
	var floorRun proctime.Run
	if floor != "" {
		m, err := filepath.Glob(filepath.Join(loops, "*.md"))
		check(err)
		if len(m) != 1 {
			check(fmt.Errorf("want one loop file in %s, found %d", loops, len(m)))
		}
		fi, err := os.Stat(m[0])
		check(err)
		floorRun = proctime.Run{Argv: []string{floor, loops, fmt.Sprint(fi.Size())}, N: n, Dir: os.TempDir()}
	}

	small := writeTranscript(dir, "1mb.jsonl", 1<<20)
	big := writeTranscript(dir, "100mb.jsonl", 100<<20)
	payload := func(m map[string]any) []byte {
		m["session_id"] = "bench"
		m["cwd"] = dir
		b, _ := json.Marshal(m)
		return b
	}
	type scenario struct {
		name  string
		argv  []string
		stdin []byte
		runs  int
		goal  string
	}
	scenarios := []scenario{{"/bin/true", []string{"/bin/true"}, nil, n, ""}}
	if noop != "" {
		scenarios = append(scenarios, scenario{"a Go program that does nothing (static)", []string{noop}, nil, n, ""})
	}
	if floor != "" {
		scenarios = append(scenarios, scenario{"floor of a blocking stop: a Go program that replaces the loop file durably (bench/statefloor)", floorRun.Argv, nil, n, ""})
	}
	scenarios = append(scenarios, scenario{"process start: baton hook, bad --harness (no I/O)", []string{bin, "hook", "stop", "--harness", "none"}, []byte("{}"), n, ""})
	if hookBin != "" {
		scenarios = append(scenarios, scenario{"process start: baton-hook, bad --harness (no I/O)", []string{hookBin, "stop", "--harness", "none"}, []byte("{}"), n, ""})
	}
	events := []struct {
		name, event, harness string
		stdin                []byte
		runs                 int
		goal                 string
	}{
		{"post-tool-use (Write)", "post-tool-use", "claude", payload(map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": filepath.Join(dir, "main.go"), "content": "package main\n"}}), n, "< 5 ms"},
		{"stop, last_assistant_message (loop blocks)", "stop", "claude", payload(map[string]any{"last_assistant_message": "still working", "stop_hook_active": false}), n, "< 5 ms"},
		{"stop, no loop (allow)", "stop", "claude", []byte(`{"session_id":"other","cwd":"` + dir + `","last_assistant_message":"x"}`), n, ""},
		{"stop, 1 MB transcript (Droid)", "stop", "droid", payload(map[string]any{"transcript_path": small}), n, ""},
		{"stop, 100 MB transcript (Droid)", "stop", "droid", payload(map[string]any{"transcript_path": big}), nBig, "< 20 ms"},
		{"session-start", "session-start", "claude", payload(map[string]any{"source": "startup"}), n, ""},
		{"pre-compact (writes a packet)", "pre-compact", "claude", payload(map[string]any{"trigger": "auto"}), n / 3, ""},
	}
	for _, e := range events {
		scenarios = append(scenarios, scenario{"baton hook " + e.name, []string{bin, "hook", e.event, "--harness", e.harness}, e.stdin, e.runs, e.goal})
		if hookBin != "" {
			scenarios = append(scenarios, scenario{"baton-hook " + e.name, []string{hookBin, e.event, "--harness", e.harness}, e.stdin, e.runs, e.goal})
		}
	}
	fmt.Println("| scenario | runs | median | p90 | × do-nothing Go | × floor | goal |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---|")
	for _, s := range scenarios {
		r := proctime.Run{Argv: s.argv, Stdin: s.stdin, N: s.runs,
			Dir: os.TempDir()} // never the project: hooks resolve the root from the payload
		if strings.Contains(s.name, "blocks") {
			r.Check = func(out []byte) error {
				if !bytes.Contains(out, []byte(`"decision":"block"`)) {
					return fmt.Errorf("did not block: %s", out)
				}
				return nil
			}
		}
		// Each hook row is timed alternating with the do-nothing program,
		// run for run, so its ratio compares the two under the same load.
		// A blocking stop also alternates with its floor.
		times, overFloor := "", ""
		var st proctime.Stats
		if noop != "" && s.argv[0] != "/bin/true" && s.argv[0] != noop {
			runs := []proctime.Run{{Argv: []string{noop}, N: s.runs, Dir: os.TempDir()}}
			withFloor := floor != "" && strings.Contains(s.name, "blocks")
			if withFloor {
				f := floorRun
				f.N = s.runs
				runs = append(runs, f)
			}
			all, err := proctime.Alternate(append(runs, r)...)
			check(err)
			st = all[len(all)-1]
			times = fmt.Sprintf("%.2f×", float64(st.Median)/float64(all[0].Median))
			if withFloor {
				overFloor = fmt.Sprintf("%.2f×", float64(st.Median)/float64(all[1].Median))
			}
		} else {
			var err error
			st, err = proctime.Measure(r)
			check(err)
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s |\n", s.name, st.Runs, proctime.MS(st.Median), proctime.MS(st.P90), times, overFloor, s.goal)
	}
}

// writeTranscript writes a Claude/Droid-style transcript of about size
// bytes: user turns, tool results, and assistant messages split over
// lines, ending in an assistant text followed by a tool_use-only line.
func writeTranscript(dir, name string, size int) string {
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	check(err)
	filler := strings.Repeat("x", 2000)
	written := 0
	for i := 0; written < size; i++ {
		lines := []string{
			fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}}`, i, filler),
			fmt.Sprintf(`{"type":"assistant","message":{"id":"msg_%d","role":"assistant","content":[{"type":"text","text":"step %d done"}]}}`, i, i),
			fmt.Sprintf(`{"type":"assistant","message":{"id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Edit","input":{"file_path":"a.go"}}]}}`, i, i+1),
		}
		for _, l := range lines {
			n, err := f.WriteString(l + "\n")
			check(err)
			written += n
		}
	}
	check(f.Close())
	return p
}

func run(c *exec.Cmd, stdin []byte) {
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	if out, err := c.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%v: %v\n%s", c.Args, err, out)
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
