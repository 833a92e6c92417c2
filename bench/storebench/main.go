// Command storebench times baton's context-store commands as whole
// processes on a small store (the goal: under 20 ms each), and
// `baton files` over a 1 000 000-line relevant-files log (time and peak
// memory: the log is streamed, never slurped). Usage:
//
//	go run ./bench/storebench -baton /path/to/baton [-n 100]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"github.com/baton-agent/baton/internal/fsstore"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton/bench/proctime"
)

func main() {
	bin := flag.String("baton", "", "the baton binary to measure")
	n := flag.Int("n", 100, "runs per small-store scenario")
	nBig := flag.Int("n-big", 5, "runs over the 1M-line log")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: storebench -baton PATH")
		os.Exit(2)
	}
	tmp, err := os.MkdirTemp("", "storebench-*")
	check(err)
	defer os.RemoveAll(tmp)

	// A small project: a git repo with one commit, a store, ten packets and
	// a 200-line log.
	small := filepath.Join(tmp, "small")
	check(os.MkdirAll(filepath.Join(small, "internal", "auth"), 0o755))
	check(os.WriteFile(filepath.Join(small, "internal", "auth", "jwt.go"), []byte("package auth\n"), 0o644))
	git(small, "init", "-q")
	git(small, "add", "-A")
	git(small, "-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-q", "-m", "first")
	run(small, *bin, "init")
	for i := 0; i < 10; i++ {
		run(small, *bin, "handoff", fmt.Sprintf("packet %d", i), "--next-prompt", "continue", "--file", "internal/auth/jwt.go")
	}
	writeLog(filepath.Join(fsstore.Open(small, fsstore.Options{}).IndexDir(), fsstore.RelevantFilesLog), 200, 40)
	body := filepath.Join(tmp, "body.md")
	check(os.WriteFile(body, []byte("## Intent\nShip it.\n\n## Next Prompt\nRun the tests.\n"), 0o644))

	// A store whose log has 1 000 000 lines (about 110 MB).
	big := filepath.Join(tmp, "big")
	check(os.MkdirAll(big, 0o755))
	run(big, *bin, "init")
	writeLog(filepath.Join(fsstore.Open(big, fsstore.Options{}).IndexDir(), fsstore.RelevantFilesLog), 1_000_000, 5000)

	scenarios := []struct {
		name string
		dir  string
		argv []string
		runs int
		goal string
	}{
		{"/bin/true", small, []string{"/bin/true"}, *n, ""},
		{"baton --help", small, []string{*bin, "--help"}, *n, "< 20 ms"},
		{"baton version", small, []string{*bin, "version"}, *n, "< 20 ms"},
		{"baton root", filepath.Join(small, "internal", "auth"), []string{*bin, "root"}, *n, "< 20 ms"},
		{"baton packet list (10 packets)", small, []string{*bin, "packet", "list"}, *n, "< 20 ms"},
		{"baton pickup latest", small, []string{*bin, "pickup", "latest"}, *n, "< 20 ms"},
		{"baton files (200-line log)", small, []string{*bin, "files", "--all"}, *n, "< 20 ms"},
		{"baton files add", small, []string{*bin, "files", "add", "internal/auth/jwt.go"}, *n, "< 20 ms"},
		{"baton handoff --body (end to end)", small, []string{*bin, "handoff", "bench", "--body", body, "--validator", "go test ./..."}, *n, "< 20 ms"},
		{"baton files --all (1 000 000-line log)", big, []string{*bin, "files", "--all", "--limit", "20"}, *nBig, ""},
	}
	fmt.Println("| command | runs | median | p90 | peak RSS | goal |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	for _, s := range scenarios {
		st, err := proctime.Measure(proctime.Run{Argv: s.argv, Dir: s.dir, N: s.runs})
		check(err)
		fmt.Printf("| `%s` | %d | %s | %s | %s | %s |\n", strings.TrimPrefix(s.name, "baton "), st.Runs,
			proctime.MS(st.Median), proctime.MS(st.P90), proctime.MB(st.MaxRSS), s.goal)
	}
}

// writeLog appends n relevant-files lines over distinct paths, one second
// apart, in the shape the post-tool-use hook writes.
func writeLog(path string, n, distinct int) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	check(err)
	w := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, `{"timestamp":"%s","file_path":"internal/pkg%03d/file%04d.go","source":"tool","confidence":0.5}`+"\n",
			t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%100, (i*7919)%distinct)
	}
	check(w.Flush())
	check(f.Close())
}

func git(dir string, args ...string) { run(dir, "git", args...) }

func run(dir, name string, args ...string) {
	c := exec.Command(name, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %v: %v\n%s", name, args, err, out)
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
