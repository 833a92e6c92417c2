// Command cmdtime runs a command many times and reports its median, p90
// and max wall time and its peak resident memory, beside a baseline
// command (default /bin/true) timed in the same run, so numbers from
// different machines can be read against process start cost.
//
//	go run ./bench/cmdtime -n 200 -stdin payload.json -- baton hook post-tool-use --harness claude
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

type stats struct {
	Command  string  `json:"command"`
	Runs     int     `json:"runs"`
	MedianMS float64 `json:"median_ms"`
	P90MS    float64 `json:"p90_ms"`
	MaxMS    float64 `json:"max_ms"`
	MaxRSSMB float64 `json:"max_rss_mb"`
}

func main() {
	n := flag.Int("n", 100, "runs per command")
	stdin := flag.String("stdin", "", "file fed to the command's stdin on every run")
	dir := flag.String("dir", "", "working directory")
	baseline := flag.String("baseline", "/bin/true", "baseline command timed in the same run (empty: none)")
	asJSON := flag.Bool("json", false, "print JSON")
	warmup := flag.Int("warmup", 3, "untimed runs first")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: cmdtime [-n N] [-stdin FILE] [-dir DIR] -- command args...")
		os.Exit(2)
	}
	var input []byte
	if *stdin != "" {
		b, err := os.ReadFile(*stdin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		input = b
	}
	var out []stats
	if *baseline != "" {
		out = append(out, measure([]string{*baseline}, nil, *dir, *n, *warmup))
	}
	out = append(out, measure(argv, input, *dir, *n, *warmup))
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return
	}
	for _, s := range out {
		fmt.Printf("%-60s runs=%d median=%.2fms p90=%.2fms max=%.2fms maxrss=%.1fMB\n", s.Command, s.Runs, s.MedianMS, s.P90MS, s.MaxMS, s.MaxRSSMB)
	}
}

func measure(argv []string, input []byte, dir string, n, warmup int) stats {
	var times []float64
	var maxRSS int64
	for i := 0; i < n+warmup; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if input != nil {
			cmd.Stdin = bytes.NewReader(input)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				fmt.Fprintf(os.Stderr, "%v: %v\n", argv, err)
				os.Exit(1)
			}
		}
		if i < warmup {
			continue
		}
		times = append(times, float64(d.Microseconds())/1000)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > maxRSS {
			maxRSS = ru.Maxrss
		}
	}
	sort.Float64s(times)
	return stats{
		Command:  fmt.Sprint(argv),
		Runs:     n,
		MedianMS: times[len(times)/2],
		P90MS:    times[len(times)*9/10],
		MaxMS:    times[len(times)-1],
		MaxRSSMB: float64(maxRSS) / 1024, // Linux reports KiB
	}
}
