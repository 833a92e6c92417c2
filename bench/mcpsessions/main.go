// Command mcpsessions measures what abandoned HTTP sessions cost `baton mcp
// --http`: it starts the server in a fresh git repository, opens -sessions
// sessions the way a client does (initialize, then initialized) and never
// comes back to them, waits -wait, and repeats -rounds times, printing the
// server's resident memory after each round and whether the first session
// still answers. Extra arguments go to `baton mcp` (--session-idle 5s).
// Usage:
//
//	go run ./bench/mcpsessions -baton /path/to/baton [-rounds 3] [-sessions 2000] [-wait 8s] -- --session-idle 5s
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

func main() {
	bin := flag.String("baton", "", "the baton binary to measure")
	rounds := flag.Int("rounds", 3, "rounds of abandoned sessions")
	sessions := flag.Int("sessions", 2000, "sessions per round")
	wait := flag.Duration("wait", 8*time.Second, "pause after each round")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: mcpsessions -baton PATH [-- baton mcp flags]")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "mcpsessions-*")
	check(err)
	defer os.RemoveAll(dir)
	check(exec.Command("git", "init", "-q", dir).Run())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(*bin, append([]string{"mcp", "--http", addr}, flag.Args()...)...)
	cmd.Dir = dir
	// No API token: loopback only, which is all this needs.
	cmd.Env = append(os.Environ(), "HOME="+dir, "BATON_API_TOKEN=")
	check(cmd.Start())
	defer cmd.Process.Kill()
	url := "http://" + addr + "/"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			check(fmt.Errorf("baton mcp did not listen on %s", addr))
		}
	}
	fmt.Printf("args: %s\n\n| after | resident memory |\n|---|---:|\n| start | %s |\n", strings.Join(flag.Args(), " "), rss(cmd.Process.Pid))
	first := ""
	for r := 1; r <= *rounds; r++ {
		for range *sessions {
			resp, err := post(url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			check(err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			sid := resp.Header.Get("Mcp-Session-Id")
			if first == "" {
				first = sid
			}
			resp, err = post(url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			check(err)
			resp.Body.Close()
		}
		fmt.Printf("| round %d: %d sessions abandoned | %s |\n", r, *sessions, rss(cmd.Process.Pid))
		time.Sleep(*wait)
	}
	resp, err := post(url, first, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	check(err)
	resp.Body.Close()
	fmt.Printf("\nThe first session now answers %s.\n", resp.Status)
}

func post(url, session, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return http.DefaultClient.Do(req)
}

// rss is the process's resident memory, from /proc.
func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int
			fmt.Sscan(v, &kb)
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "?"
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpsessions:", err)
		os.Exit(1)
	}
}
