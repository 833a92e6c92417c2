// Command hookbench measures baton's hooks as harnesses run them: a whole
// process per event, payload on stdin, timed from fork to exit, median of
// many runs, beside /bin/true measured in the same run. Usage:
//
//	go run ./bench/hookbench -baton /path/to/baton [-n 300]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baton-agent/baton/bench/proctime"
)

func main() {
	bin := flag.String("baton", "", "the baton binary to measure")
	n := flag.Int("n", 300, "runs per fast scenario")
	nBig := flag.Int("n-big", 60, "runs per 100 MB transcript scenario")
	conc := flag.Int("concurrent", 200, "stops started at once on one loop (0 skips it)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: hookbench -baton PATH")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "hookbench-*")
	check(err)
	defer os.RemoveAll(dir)
	check(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	run(exec.Command(*bin, "--root", dir, "init"), nil)
	// An unbounded loop bound to the session, so every stop blocks and
	// writes the loop file (the common, slowest path of a stop).
	c := exec.Command(*bin, "--root", dir, "loop", "start", "--max-iterations", "0", "keep going")
	c.Env = append(os.Environ(), "BATON_SESSION_ID=bench")
	run(c, nil)

	small := writeTranscript(dir, "1mb.jsonl", 1<<20)
	big := writeTranscript(dir, "100mb.jsonl", 100<<20)
	payload := func(m map[string]any) []byte {
		m["session_id"] = "bench"
		m["cwd"] = dir
		b, _ := json.Marshal(m)
		return b
	}
	scenarios := []struct {
		name  string
		argv  []string
		stdin []byte
		runs  int
		goal  string
	}{
		{"/bin/true", []string{"/bin/true"}, nil, *n, ""},
		{"process start: baton hook, bad --harness (no I/O)", []string{*bin, "hook", "stop", "--harness", "none"}, []byte("{}"), *n, ""},
		{"baton hook post-tool-use (Write)", []string{*bin, "hook", "post-tool-use", "--harness", "claude"}, payload(map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": filepath.Join(dir, "main.go"), "content": "package main\n"}}), *n, "< 5 ms"},
		{"baton hook stop, last_assistant_message (loop blocks)", []string{*bin, "hook", "stop", "--harness", "claude"}, payload(map[string]any{"last_assistant_message": "still working", "stop_hook_active": false}), *n, "< 5 ms"},
		{"baton hook stop, no loop (allow)", []string{*bin, "hook", "stop", "--harness", "claude"}, []byte(`{"session_id":"other","cwd":"` + dir + `","last_assistant_message":"x"}`), *n, ""},
		{"baton hook stop, 1 MB transcript (Droid)", []string{*bin, "hook", "stop", "--harness", "droid"}, payload(map[string]any{"transcript_path": small}), *n, ""},
		{"baton hook stop, 100 MB transcript (Droid)", []string{*bin, "hook", "stop", "--harness", "droid"}, payload(map[string]any{"transcript_path": big}), *nBig, "< 20 ms"},
		{"baton hook session-start", []string{*bin, "hook", "session-start", "--harness", "claude"}, payload(map[string]any{"source": "startup"}), *n, ""},
	}
	hostileDir, fifo := hostileStore(*bin)
	hpayload := func(m map[string]any) []byte {
		m["session_id"] = "bench"
		m["cwd"] = hostileDir
		b, _ := json.Marshal(m)
		return b
	}
	scenarios = append(scenarios, []struct {
		name  string
		argv  []string
		stdin []byte
		runs  int
		goal  string
	}{
		{"hostile store: session-start (a packet and the files log linked to /dev/zero, a 6 MiB packet, 20 MiB of log)", []string{*bin, "hook", "session-start", "--harness", "claude"}, hpayload(map[string]any{"source": "startup"}), *n, "usual ms"},
		{"hostile store: stop, CRLF loop (loop blocks)", []string{*bin, "hook", "stop", "--harness", "claude"}, hpayload(map[string]any{"last_assistant_message": "still working", "stop_hook_active": false}), *n, "usual ms"},
		{"hostile store: stop, transcript_path is a FIFO (Droid)", []string{*bin, "hook", "stop", "--harness", "droid"}, hpayload(map[string]any{"transcript_path": fifo}), *n, "usual ms"},
		{"hostile store: pre-compact, transcript_path is a FIFO", []string{*bin, "hook", "pre-compact", "--harness", "claude"}, hpayload(map[string]any{"trigger": "auto", "transcript_path": fifo}), *n / 3, ""},
	}...)
	fmt.Println("| scenario | runs | median | p90 | goal |")
	fmt.Println("|---|---:|---:|---:|---|")
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
		st, err := proctime.Measure(r)
		check(err)
		fmt.Printf("| %s | %d | %s | %s | %s |\n", s.name, st.Runs, proctime.MS(st.Median), proctime.MS(st.P90), s.goal)
	}
	if *conc > 0 {
		fmt.Println()
		concurrentStops(*bin, dir, *conc)
	}
}

// hostileStore makes a store as a hostile checkout could leave it, with
// a CRLF foreground loop bound to the benchmark's session, and returns
// its root and a FIFO to name as a transcript.
func hostileStore(bin string) (string, string) {
	dir, err := os.MkdirTemp("", "hookbench-hostile-*")
	check(err)
	check(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	run(exec.Command(bin, "--root", dir, "init"), nil)
	run(exec.Command(bin, "--root", dir, "handoff", "real work", "--next-prompt", "carry on"), nil)
	c := exec.Command(bin, "--root", dir, "loop", "start", "--max-iterations", "0", "--json", "keep going")
	c.Env = append(os.Environ(), "BATON_SESSION_ID=bench")
	out, err := c.Output()
	check(err)
	var l struct{ Path string }
	check(json.Unmarshal(out, &l))
	b, err := os.ReadFile(l.Path)
	check(err)
	check(os.WriteFile(l.Path, bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), 0o644))
	store := filepath.Join(dir, ".agent", "context")
	check(os.Symlink("/dev/zero", filepath.Join(store, "packets", "20991231T000000Z-zero.md")))
	huge := "---\nid: 20991231T000001Z-huge\ncreated_at: 2099-12-31T00:00:01Z\nupdated_at: 2099-12-31T00:00:01Z\nstatus: active\npurpose: huge\n---\n\n## Notes\n\n" + strings.Repeat("x", 6<<20) + "\n"
	check(os.WriteFile(filepath.Join(store, "packets", "20991231T000001Z-huge.md"), []byte(huge), 0o644))
	// A long log, then the /dev/zero link in its place for half the runs'
	// worth of worst case: the tail read keeps either bounded.
	line := `{"timestamp":"2026-11-24T00:00:00Z","file_path":"a.go","source":"tool","confidence":0.5}` + "\n"
	check(os.WriteFile(filepath.Join(store, "indexes", "relevant-files.jsonl"), []byte(strings.Repeat(line, 20<<20/len(line))), 0o644))
	check(os.Remove(filepath.Join(store, "indexes", "relevant-files.jsonl")))
	check(os.Symlink("/dev/zero", filepath.Join(store, "indexes", "relevant-files.jsonl")))
	fifo := filepath.Join(dir, "transcript.fifo")
	check(syscall.Mkfifo(fifo, 0o644))
	return dir, fifo
}

// concurrentStops starts n stops of one session on one loop at once and
// reports how long each took, fork to exit, beside n stops at once that
// touch no loop (the same load on the machine, without the loop's lock).
func concurrentStops(bin, dir string, n int) {
	stop := func(session string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": session, "cwd": dir, "last_assistant_message": "still working", "stop_hook_active": false})
		return b
	}
	fmt.Printf("| %d stops at once | median | p99 | slowest | failed |\n", n)
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, sc := range []struct {
		name    string
		session string
	}{{"no loop of theirs (no lock)", "other"}, {"one session, one loop (lock, write)", "bench"}} {
		times := make([]time.Duration, n)
		failed := 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := exec.Command(bin, "hook", "stop", "--harness", "claude")
				c.Stdin = bytes.NewReader(stop(sc.session))
				var errb bytes.Buffer
				c.Stderr = &errb
				start := time.Now()
				err := c.Run()
				times[i] = time.Since(start)
				if err != nil || errb.Len() > 0 {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		slices.Sort(times)
		fmt.Printf("| %s | %s | %s | %s | %d |\n", sc.name, proctime.MS(times[n/2]), proctime.MS(times[n*99/100]), proctime.MS(times[n-1]), failed)
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
