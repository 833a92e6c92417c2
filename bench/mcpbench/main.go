// Command mcpbench measures `baton mcp` as a client starts it: a whole
// process per run, from fork to the initialize answer, then a pickup call
// from request to answer, in a git repository whose store holds -packets
// packets written by `baton handoff`. It prints the median and 95th
// percentile of each.
// Usage:
//
//	go run ./bench/mcpbench -baton /path/to/baton [-n 200] [-packets 200]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	bin := flag.String("baton", "", "the baton binary to measure")
	n := flag.Int("n", 200, "runs")
	packets := flag.Int("packets", 200, "packets in the store")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: mcpbench -baton PATH")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "mcpbench-*")
	check(err)
	defer os.RemoveAll(dir)
	check(exec.Command("git", "init", "-q", dir).Run())
	check(exec.Command(*bin, "--root", dir, "init").Run())
	// Written by baton itself, so the store is the real thing.
	for i := range *packets {
		check(exec.Command(*bin, "--root", dir, "handoff", fmt.Sprintf("task %d", i), "--next-prompt", strings.Repeat("Continue the work. ", 40)).Run())
	}
	c := exec.Command(*bin, "--root", dir, "handoff", "the packet to pick up", "--next-prompt", strings.Repeat("Finish the lexer and run the tests. ", 100))
	check(c.Run())

	var start, pickup []time.Duration
	for range *n {
		s, p := once(*bin, dir)
		start, pickup = append(start, s), append(pickup, p)
	}
	fmt.Printf("| `baton mcp`, %d packets in the store | median | p95 |\n|---|---|---|\n", *packets+1)
	fmt.Printf("| process start to `initialize` answered | %s | %s |\n", ms(pct(start, 50)), ms(pct(start, 95)))
	fmt.Printf("| `pickup` call (latest packet, 3.6 KB prompt) | %s | %s |\n", ms(pct(pickup, 50)), ms(pct(pickup, 95)))
	fmt.Printf("\n%d runs each.\n", *n)
}

const (
	initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	pickupCall  = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pickup","arguments":{}}}` + "\n"
)

// once starts the server, times initialize and one pickup, and ends it.
func once(bin, dir string) (start, pickup time.Duration) {
	c := exec.Command(bin, "mcp")
	c.Dir = dir
	in, err := c.StdinPipe()
	check(err)
	out, err := c.StdoutPipe()
	check(err)
	r := bufio.NewReaderSize(out, 1<<20)
	t0 := time.Now()
	check(c.Start())
	_, err = io.WriteString(in, initialize)
	check(err)
	expect(r, `"id":1`)
	start = time.Since(t0)
	_, err = io.WriteString(in, initialized)
	check(err)
	t1 := time.Now()
	_, err = io.WriteString(in, pickupCall)
	check(err)
	expect(r, `"id":2`)
	pickup = time.Since(t1)
	in.Close()
	check(c.Wait())
	return start, pickup
}

// expect reads lines until one holds want.
func expect(r *bufio.Reader, want string) {
	for {
		line, err := r.ReadString('\n')
		check(err)
		if strings.Contains(line, want) {
			if strings.Contains(line, `"isError":true`) || strings.Contains(line, `"error":`) {
				check(fmt.Errorf("the server answered an error: %s", line))
			}
			return
		}
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}
