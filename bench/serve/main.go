// Command serve measures `baton serve` as its users load it: a real
// server process on loopback, with in-process workers running deliveries
// through a stand-in agent, while many clients read the dashboard and the
// API, and many subscribers follow one delivery's live events.
//
//	CGO_ENABLED=0 go build -o /tmp/baton ./cmd/baton
//	go run ./bench/serve -baton /tmp/baton [-clients 200 -duration 30s -subscribers 500]
//	scripts/pg-test.sh go run ./bench/serve -baton /tmp/baton -db postgres
//
// Load: -clients goroutines each request, in turn, the list page, the
// board, a delivery's page, the API list and a delivery's JSON, for
// -duration; p50, p99 and errors per route. Fan-out: -subscribers streams
// of one delivery whose agent prints a line with its clock every 50 ms;
// for each line, the delay until the last subscriber has it, and the
// server's memory.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// agentScript answers as planner and reviewer at once. As implementer it
// prints "tick <unix ns>" every 50 ms for as long as the delivery's
// summary asks ("ticks N"), then writes a file named after its branch.
const agentScript = `#!/bin/sh
prompt=$(cat)
case "$prompt" in
*"You are the reviewer"*) echo '{"verdict":"pass","summary":"ok","feedback":""}' ;;
*"You are the planner"*) echo "1. Write the file." ;;
*) n=$(printf '%s' "$prompt" | sed -n 's/.*ticks \([0-9][0-9]*\).*/\1/p' | head -n1)
   i=0; while [ "$i" -lt "${n:-0}" ]; do echo "tick $(date +%s%N)"; sleep 0.05; i=$((i+1)); done
   f=$(git rev-parse --abbrev-ref HEAD | tr / -); echo "$f" > "$f.txt"; echo done ;;
esac
`

const token = "bench-serve-token-0123456789abcdef"

func main() {
	bin := flag.String("baton", "", "baton binary (CGO_ENABLED=0 go build -o /tmp/baton ./cmd/baton)")
	clients := flag.Int("clients", 200, "concurrent readers")
	duration := flag.Duration("duration", 30*time.Second, "how long the readers read")
	think := flag.Duration("think", time.Second, "each reader's pause between requests, as a person or a polling dashboard pauses (0: back to back, to find the saturation throughput)")
	deliveries := flag.Int("deliveries", 60, "deliveries created before the readers start (they run while the readers read)")
	subscribers := flag.Int("subscribers", 500, "live event subscribers on one delivery (0 skips the fan-out)")
	db := flag.String("db", "sqlite", `"sqlite", or "postgres" (the server BATON_TEST_POSTGRES_URL names)`)
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: serve -baton PATH [-clients N -duration D -subscribers N -db sqlite|postgres]")
		os.Exit(2)
	}
	if err := run(*bin, *db, *clients, *deliveries, *subscribers, *duration, *think); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

type server struct {
	cmd  *exec.Cmd
	base string
	repo string
	http *http.Client
}

func run(bin, db string, clients, deliveries, subscribers int, duration, think time.Duration) error {
	tmp, err := os.MkdirTemp("", "baton-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	s, err := start(bin, db, tmp)
	if err != nil {
		return err
	}
	defer s.stop()

	var ids []string
	for i := range deliveries {
		// Each implementer prints for a second or so: the workers stay
		// busy writing events while the readers read.
		id, err := s.create(fmt.Sprintf("Bench delivery %d: ticks 20", i))
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	fmt.Printf("baton serve, %s, 2 in-process workers, %d deliveries running or done\n\n", db, deliveries)
	if err := load(s, ids, clients, duration, think); err != nil {
		return err
	}
	if subscribers > 0 {
		fmt.Println()
		return fanOut(s, subscribers)
	}
	return nil
}

// start runs `baton serve` in a fresh repository and waits until it is ready.
func start(bin, db, tmp string) (*server, error) {
	repo := filepath.Join(tmp, "app")
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# app\n"), 0o644); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "seed"}} {
		c := exec.Command("git", args...)
		c.Dir, c.Env = repo, env
		if out, err := c.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	agent := filepath.Join(tmp, "agent.sh")
	if err := os.WriteFile(agent, []byte(agentScript), 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--addr", addr, "--workers", "2", "--poll", "200ms", "--agent", "command:" + agent}
	if db == "postgres" {
		u := os.Getenv("BATON_TEST_POSTGRES_URL")
		if u == "" {
			return nil, errors.New("-db postgres needs BATON_TEST_POSTGRES_URL (run under scripts/pg-test.sh)")
		}
		args = append(args, "--db", u)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = repo
	cmd.Env = append(env, "BATON_DATA_DIR="+filepath.Join(tmp, "data"), "BATON_API_TOKEN="+token)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr, repo: repo, http: &http.Client{
		Transport: &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, MaxConnsPerHost: 0},
		Timeout:   10 * time.Second,
	}}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := s.http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(end) {
			s.stop()
			return nil, fmt.Errorf("serve not ready after 30s: %s", out.String())
		}
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// create makes a delivery through the API and returns its id.
func (s *server) create(summary string) (string, error) {
	b, _ := json.Marshal(map[string]any{"repo": s.repo, "summary": summary, "checkpoints": []string{}, "endpoint": "deploy"})
	req, _ := http.NewRequest("POST", s.base+"/api/deliveries", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Delivery struct {
			ID string `json:"id"`
		} `json:"delivery"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create %q: %d %v", summary, resp.StatusCode, err)
	}
	return v.Delivery.ID, nil
}

type sample struct {
	route string
	took  time.Duration
	ok    bool
}

// load runs clients readers for d and prints latency per route.
func load(s *server, ids []string, clients int, d, think time.Duration) error {
	routes := []struct{ name, path string }{
		{"GET / (list page)", "/"},
		{"GET /board", "/board"},
		{"GET /deliveries/{id}", "/deliveries/%s"},
		{"GET /api/deliveries", "/api/deliveries"},
		{"GET /api/deliveries/{id}", "/api/deliveries/%s"},
	}
	var mu sync.Mutex
	var all []sample
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []sample
			// Readers start spread over one pause, as they would arrive.
			if think > 0 {
				time.Sleep(think * time.Duration(c) / time.Duration(clients))
			}
			for i := c; time.Now().Before(stop); i++ {
				if i > c && think > 0 {
					time.Sleep(think)
				}
				r := routes[i%len(routes)]
				path := r.path
				if strings.Contains(path, "%s") {
					path = fmt.Sprintf(path, ids[i%len(ids)])
				}
				t0 := time.Now()
				resp, err := s.http.Get(s.base + path)
				ok := err == nil
				if ok {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok = err == nil && resp.StatusCode == http.StatusOK
				}
				mine = append(mine, sample{r.name, time.Since(t0), ok})
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("%d clients for %s, %s between requests: %.0f requests/s\n\n", clients, d, think, float64(len(all))/d.Seconds())
	fmt.Println("| route | requests | p50 | p99 | errors |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, r := range routes {
		var ts []time.Duration
		errs := 0
		for _, x := range all {
			if x.route == r.name {
				ts = append(ts, x.took)
				if !x.ok {
					errs++
				}
			}
		}
		slices.Sort(ts)
		if len(ts) == 0 {
			continue
		}
		fmt.Printf("| %s | %d | %s | %s | %d |\n", r.name, len(ts), ms(ts[len(ts)/2]), ms(ts[len(ts)*99/100]), errs)
	}
	return nil
}

// fanOut follows one delivery with n subscribers while its agent prints
// a tick every 50 ms, and reports, per tick, the delay from the agent's
// print to the last subscriber receiving it.
func fanOut(s *server, n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id, err := s.create("Fan-out delivery: ticks 300")
	if err != nil {
		return err
	}
	// Wait for the implementer to print, then subscribe from there.
	var after int64
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		resp, err := s.http.Get(s.base + "/api/deliveries/" + id)
		if err != nil {
			return err
		}
		var v struct {
			Delivery  struct{ Phase, RunStatus string } `json:"delivery"`
			LastEvent int64                             `json:"last_event"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if v.Delivery.Phase == "implement" && v.LastEvent > 0 {
			after = v.LastEvent
			break
		}
		if time.Now().After(end) {
			return fmt.Errorf("fan-out delivery %s never reached implement", id)
		}
	}
	sse := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	var mu sync.Mutex
	latest := map[int64]time.Duration{} // tick seq -> delay to the slowest subscriber so far
	seen := map[int64]int{}
	var connected, failed atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/deliveries/%s/events?after=%d", s.base, id, after), nil)
			resp, err := sse.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Add(1)
				return
			}
			defer resp.Body.Close()
			connected.Add(1)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				got := time.Now()
				var ev struct {
					Seq  int64  `json:"seq"`
					Text string `json:"text"`
				}
				if json.Unmarshal([]byte(data), &ev) != nil {
					continue
				}
				ns, ok := strings.CutPrefix(ev.Text, "tick ")
				if !ok {
					continue
				}
				at, err := strconv.ParseInt(ns, 10, 64)
				if err != nil {
					continue
				}
				delay := got.Sub(time.Unix(0, at))
				mu.Lock()
				latest[ev.Seq] = max(latest[ev.Seq], delay)
				seen[ev.Seq]++
				mu.Unlock()
			}
		}()
	}
	// Sample the server's memory while the ticks flow (about 15 s).
	var rss, peak int64
	for end := time.Now().Add(14 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if v := status(s.cmd.Process.Pid, "VmRSS"); v > rss {
			rss = v
		}
	}
	peak = status(s.cmd.Process.Pid, "VmHWM")
	cancel()
	wg.Wait()
	var delays []time.Duration
	complete := 0
	for seq, d := range latest {
		if seen[seq] == int(connected.Load()) {
			complete++
			delays = append(delays, d)
		}
	}
	slices.Sort(delays)
	fmt.Printf("%d subscribers on one delivery (%d connected, %d failed), one event every 50 ms\n\n", n, connected.Load(), failed.Load())
	fmt.Println("| ticks seen by every subscriber | delay to the last subscriber p50 | p99 | max | server RSS (max while streaming) | server peak RSS |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	if len(delays) == 0 {
		return errors.New("no tick reached every subscriber")
	}
	fmt.Printf("| %d | %s | %s | %s | %.1f MB | %.1f MB |\n", complete, ms(delays[len(delays)/2]), ms(delays[len(delays)*99/100]), ms(delays[len(delays)-1]), float64(rss)/1e3, float64(peak)/1e3)
	return nil
}

// status reads a kB field of /proc/<pid>/status.
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
