// Command mcpbench measures `baton mcp` as a client starts it: a whole
// process per run, from fork to the initialize answer, then a pickup call
// from request to answer, in a project whose store holds -packets
// packets. It prints the median and 95th percentile of each.
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
	"path/filepath"
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
	check(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	check(exec.Command(*bin, "--root", dir, "init").Run())
	for i := range *packets {
		// Written the way baton writes them, so the store is the real one.
		id := base.Add(time.Duration(i)*time.Minute).Format("20060102T150405Z") + fmt.Sprintf("-task-%d", i)
		body := fmt.Sprintf("---\nid: %s\ncreated_at: %s\nupdated_at: %s\nstatus: done\nsource: bench\npurpose: task %d\n---\n\n## Intent\n\ntask %d\n\n## Next Prompt (Draft)\n\n%s\n",
			id, base.Format(time.RFC3339), base.Format(time.RFC3339), i, i, strings.Repeat("Continue the work. ", 40))
		check(os.WriteFile(filepath.Join(dir, ".agent", "context", "packets", id+".md"), []byte(body), 0o644))
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
