// Command slowbody measures how `baton serve` answers /healthz while
// thousands of clients send request bodies a byte at a time: the
// slow-body attack of issue 20 (1,000 such bodies stayed open for 45 s;
// 4,200 filled a 4,096 file limit and /healthz stopped answering).
//
//	CGO_ENABLED=0 go build -o /tmp/baton ./cmd/baton
//	go run ./bench/slowbody -baton /tmp/baton [-conns 4000 -duration 30s -nofile 4096]
//
// -conns clients each open a connection, send the headers of a POST with
// a 100,000-byte body (in turn to /api/webhooks/github and /login, which
// read bodies before anyone is authenticated, and to /api/deliveries
// without a token), then one byte every -every. When the server answers
// or closes, the client waits -reconnect and starts again. Meanwhile one
// prober asks GET /healthz every 10 ms on a kept-alive connection and
// another on a new connection each time. It prints the probes' p50, p99,
// max and failures, what the trickling clients got, and the server's
// open files and memory. -nofile starts the server under that open-file
// limit (soft and hard), as a host with a low limit would.
package main

import (
	"bufio"
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

const token = "bench-slowbody-token-0123456789abcdef"

func main() {
	bin := flag.String("baton", "", "baton binary (CGO_ENABLED=0 go build -o /tmp/baton ./cmd/baton)")
	conns := flag.Int("conns", 4000, "clients trickling bodies at once")
	duration := flag.Duration("duration", 30*time.Second, "how long /healthz is measured, after the clients connected")
	every := flag.Duration("every", time.Second, "each client's pause between body bytes")
	reconnect := flag.Duration("reconnect", time.Second, "each client's pause before it connects again after the server answered or closed")
	nofile := flag.Int("nofile", 0, "start the server with this open-file limit, soft and hard (0: inherit)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: slowbody -baton PATH [-conns N -duration D -every D -reconnect D -nofile N]")
		os.Exit(2)
	}
	if err := run(*bin, *conns, *duration, *every, *reconnect, *nofile); err != nil {
		fmt.Fprintln(os.Stderr, "slowbody:", err)
		os.Exit(1)
	}
}

type server struct {
	cmd  *exec.Cmd
	addr string
	out  *lockedBuffer
}

func run(bin string, conns int, duration, every, reconnect time.Duration, nofile int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(conns)+1000 {
		return fmt.Errorf("this process may open %d files; %d clients need more: raise ulimit -n", lim.Cur, conns)
	}
	tmp, err := os.MkdirTemp("", "baton-bench-slowbody-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	s, err := start(bin, tmp, nofile)
	if err != nil {
		return err
	}
	defer s.stop()

	stop := make(chan struct{})
	var outcomes sync.Map // outcome -> *atomic.Int64
	count := func(k string) {
		v, _ := outcomes.LoadOrStore(k, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	var open atomic.Int64
	var wg sync.WaitGroup
	routes := []string{
		"POST /api/webhooks/github HTTP/1.1\r\nContent-Type: application/json\r\nX-GitHub-Event: issues\r\n",
		"POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n",
		"POST /api/deliveries HTTP/1.1\r\nContent-Type: application/json\r\n",
	}
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the first connections over two seconds, as a botnet's
			// would arrive, rather than one SYN flood.
			if !pause(stop, 2*time.Second*time.Duration(i)/time.Duration(conns)) {
				return
			}
			head := routes[i%len(routes)] + "Host: " + s.addr + "\r\nContent-Length: 100000\r\n\r\n"
			for {
				count(trickle(s.addr, head, every, stop, &open))
				if !pause(stop, reconnect) {
					return
				}
			}
		}()
	}
	// Let every client connect once before measuring.
	if !pause(nil, 3*time.Second) {
		return nil
	}
	keep := &http.Client{Timeout: 5 * time.Second}
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var kept, each probes
	var maxOpen, maxFiles, maxRSS int64
	end := time.Now().Add(duration)
	var pw sync.WaitGroup
	for _, p := range []struct {
		c *http.Client
		r *probes
	}{{keep, &kept}, {fresh, &each}} {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for time.Now().Before(end) {
				p.r.probe(p.c, "http://"+s.addr+"/healthz")
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	for time.Now().Before(end) {
		maxOpen = max(maxOpen, open.Load())
		maxFiles = max(maxFiles, files(s.cmd.Process.Pid))
		maxRSS = max(maxRSS, status(s.cmd.Process.Pid, "VmRSS"))
		time.Sleep(250 * time.Millisecond)
	}
	pw.Wait()
	close(stop)
	wg.Wait()

	limit := "inherited"
	if nofile > 0 {
		limit = strconv.Itoa(nofile)
	}
	fmt.Printf("%d clients trickling a byte every %s (reconnecting %s after an answer), %s measured, server open-file limit %s\n\n",
		conns, every, reconnect, duration, limit)
	fmt.Println("| GET /healthz every 10 ms | requests | p50 | p99 | max | failed |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	kept.print("kept-alive connection")
	each.print("new connection each")
	fmt.Println()
	fmt.Printf("trickling clients connected at once (max): %d; server open files (max): %d; server RSS (max): %.1f MB\n", maxOpen, maxFiles, float64(maxRSS)/1e3)
	var keys []string
	outcomes.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
	slices.Sort(keys)
	fmt.Print("what the trickling clients got:")
	for _, k := range keys {
		v, _ := outcomes.Load(k)
		fmt.Printf(" %s ×%d;", k, v.(*atomic.Int64).Load())
	}
	fmt.Println()
	if w := s.out.warning(); w != "" {
		fmt.Println("serve said:", w)
	}
	return nil
}

// trickle sends head and then a byte every interval until the server
// answers or closes, and says how it ended.
func trickle(addr, head string, every time.Duration, stop <-chan struct{}, open *atomic.Int64) string {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "connect failed"
	}
	defer c.Close()
	open.Add(1)
	defer open.Add(-1)
	if _, err := io.WriteString(c, head); err != nil {
		return "write failed"
	}
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- "closed without an answer"
			return
		}
		resp.Body.Close()
		answered <- strconv.Itoa(resp.StatusCode)
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case got := <-answered:
			return got
		case <-stop:
			return "still open at the end"
		case <-t.C:
			if _, err := c.Write([]byte("x")); err != nil {
				c.Close()
				return <-answered
			}
		}
	}
}

// pause waits d, or returns false when stop closes first.
func pause(stop <-chan struct{}, d time.Duration) bool {
	select {
	case <-stop:
		return false
	case <-time.After(d):
		return true
	}
}

type probes struct {
	took   []time.Duration
	failed int
}

func (p *probes) probe(c *http.Client, u string) {
	t0 := time.Now()
	resp, err := c.Get(u)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
	}
	if err != nil {
		p.failed++
		return
	}
	p.took = append(p.took, time.Since(t0))
}

func (p *probes) print(name string) {
	ts := slices.Clone(p.took)
	slices.Sort(ts)
	if len(ts) == 0 {
		fmt.Printf("| %s | 0 | – | – | – | %d |\n", name, p.failed)
		return
	}
	fmt.Printf("| %s | %d | %s | %s | %s | %d |\n", name, len(ts)+p.failed, ms(ts[len(ts)/2]), ms(ts[len(ts)*99/100]), ms(ts[len(ts)-1]), p.failed)
}

// start runs `baton serve` (API only, no workers) and waits until it
// answers.
func start(bin, tmp string, nofile int) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--addr", addr, "--workers", "0", "--agent", "command:true"}
	cmd := exec.Command(bin, args...)
	if nofile > 0 {
		// sh's ulimit -n sets soft and hard limits: the server cannot
		// raise it back.
		cmd = exec.Command("sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile), bin}, args...)...)
	}
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "BATON_DATA_DIR="+filepath.Join(tmp, "data"), "BATON_API_TOKEN="+token)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, addr: addr, out: out}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/readyz")
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

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// warning is serve's open-file warning, if it printed one.
func (l *lockedBuffer) warning() string {
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, "open only") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// files counts the process's open file descriptors.
func files(pid int) int64 {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return int64(len(es))
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
