package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/baton-agent/baton/bench/proctime"
)

// storm starts n stop hooks of one session on one loop at once, rounds
// times, each round on a fresh loop, and reports the slowest hook of any
// round and whether every stop counted: each must block and advance the
// loop by one iteration. Two rows set the floor on this machine: n
// processes that exit at once (a bad --harness), and n stops of another
// session (they read the loop and take no lock).
func storm(bin string, n, rounds int) {
	fmt.Printf("| %d processes at once | rounds | median | p99 | slowest | blocked | iterations lost |\n", n)
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|\n")
	var floor []time.Duration
	for range rounds {
		ts, _ := together(n, []string{bin, "hook", "stop", "--harness", "none"}, []byte("{}"))
		floor = append(floor, ts...)
	}
	row("process start only: `baton hook stop --harness none`", floor, rounds, "", "")

	var all, nolock []time.Duration
	blocked, lost := 0, 0
	for range rounds {
		dir, err := os.MkdirTemp("", "hookstorm-*")
		check(err)
		check(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
		run(exec.Command(bin, "--root", dir, "init"), nil)
		c := exec.Command(bin, "--root", dir, "loop", "start", "--max-iterations", "0", "keep going")
		c.Env = append(os.Environ(), "BATON_SESSION_ID=storm")
		run(c, nil)
		other := []byte(`{"session_id":"other","cwd":"` + dir + `","last_assistant_message":"still working","stop_hook_active":false}`)
		ts, _ := together(n, []string{bin, "hook", "stop", "--harness", "claude"}, other)
		nolock = append(nolock, ts...)
		payload := []byte(`{"session_id":"storm","cwd":"` + dir + `","last_assistant_message":"still working","stop_hook_active":false}`)
		times, outs := together(n, []string{bin, "hook", "stop", "--harness", "claude"}, payload)
		for _, o := range outs {
			if bytes.Contains(o, []byte(`"decision":"block"`)) {
				blocked++
			} else {
				fmt.Fprintf(os.Stderr, "a stop did not block: %s\n", o)
			}
		}
		all = append(all, times...)
		out, err := exec.Command(bin, "--root", dir, "loop", "status", "--json").Output()
		check(err)
		var st struct {
			Loop struct {
				Iteration int `json:"iteration"`
			} `json:"loop"`
		}
		if json.Unmarshal(out, &st) != nil || st.Loop.Iteration == 0 {
			fmt.Fprintf(os.Stderr, "cannot read the loop's iteration: %s\n", out)
			os.Exit(1)
		}
		lost += 1 + n - st.Loop.Iteration
		os.RemoveAll(dir)
	}
	row("`baton hook stop` of another session (reads the loop, no lock, no write)", nolock, rounds, "", "")
	row("`baton hook stop`, one session, one loop (each blocks and rewrites the loop)", all, rounds, fmt.Sprintf("%d of %d", blocked, n*rounds), fmt.Sprint(lost))
}

// together starts n copies of argv at once and returns each one's wall
// time, fork to exit, and output.
func together(n int, argv []string, stdin []byte) ([]time.Duration, [][]byte) {
	times := make([]time.Duration, n)
	outs := make([][]byte, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := exec.Command(argv[0], argv[1:]...)
			c.Dir = os.TempDir()
			c.Stdin = bytes.NewReader(stdin)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			<-gate
			start := time.Now()
			_ = c.Run() // the output says what happened
			times[i], outs[i] = time.Since(start), out.Bytes()
		}()
	}
	close(gate)
	wg.Wait()
	return times, outs
}

func row(name string, ds []time.Duration, rounds int, blocked, lost string) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	fmt.Printf("| %s | %d | %s | %s | %s | %s | %s |\n", name, rounds, proctime.MS(ds[len(ds)/2]), proctime.MS(ds[len(ds)*99/100]), proctime.MS(ds[len(ds)-1]), blocked, lost)
}
