package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

// TestHelperProcess runs baton's Main when the test binary is started as a
// child by a benchmark that measures a whole process (peak RSS). It does
// nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv("BATON_HELPER_PROCESS") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	wd, _ := os.Getwd()
	f := &Factory{
		IO:     IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr},
		Now:    time.Now,
		Getenv: os.Getenv, WorkDir: wd, Version: "bench",
	}
	wireForTest(f, "")
	os.Exit(Main(context.Background(), args, f))
}

// largePR is a pull request of files files whose diff is size bytes, as
// githubtest.LargeDiff generates it, with a file list to match.
func largePR(files int, size int64) githubtest.PullRequest {
	pr := githubtest.PullRequest{Number: 1, Title: "Vendor the world", Author: "alice", Diff: githubtest.LargeDiff(files, size)}
	lines := int(size / int64(files) / 64)
	for i := 1; i <= files; i++ {
		pr.Files = append(pr.Files, githubtest.File{Filename: fmt.Sprintf("gen/large%06d.txt", i), Status: "added", Additions: lines})
	}
	return pr
}

// BenchmarkReviewPR renders review-pr briefs through the real command and
// client against githubtest: a 100 MB, 5,000-file diff in process and as
// a separate process (for its peak RSS), and a 99-file pull request for
// the request count.
//
//	go test -run '^$' -bench ReviewPR -benchtime 5x ./internal/cli/
func BenchmarkReviewPR(b *testing.B) {
	const size = 100 << 20
	srv := githubtest.NewServer(b, githubtest.WithoutDiffLimits())
	srv.RequireToken(testToken)
	srv.AddPullRequest("octo/app", largePR(5000, size))
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, Title: "Small", Files: githubtest.GenerateFiles(99)})
	env := map[string]string{"GITHUB_API_URL": srv.URL(), "GITHUB_TOKEN": testToken, "BATON_GITHUB_ALLOW_HTTP_LOOPBACK": "1"}
	args := func(n int) []string { return []string{"review-pr", fmt.Sprint(n), "--repo", "octo/app"} }

	run := func(b *testing.B, n int) {
		var out, errb bytes.Buffer
		f := &Factory{IO: IO{Out: &out, Err: &errb}, Now: time.Now, Getenv: func(k string) string { return env[k] }, WorkDir: b.TempDir(), Version: "bench"}
		wireForTest(f, "")
		if code := Main(b.Context(), args(n), f); code != 0 || out.Len() == 0 {
			b.Fatalf("review-pr %d = exit %d: %s", n, code, errb.String())
		}
	}

	b.Run("100MB-5000-files", func(b *testing.B) {
		b.SetBytes(size)
		srv.ResetRequests()
		for b.Loop() {
			run(b, 1)
		}
		b.ReportMetric(float64(len(srv.Requests()))/float64(b.N), "requests/op")
	})

	b.Run("100MB-5000-files-process", func(b *testing.B) {
		b.SetBytes(size)
		var maxRSS int64
		srv.ResetRequests()
		for b.Loop() {
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args(1)...)...)
			cmd.Env = append(os.Environ(), append(srv.Env(), "BATON_HELPER_PROCESS=1", "GITHUB_TOKEN="+testToken)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil || !strings.HasPrefix(out.String(), "## Task: Review PR #1") {
				b.Fatalf("review-pr as a process: %v: %s", err, errb.String())
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				maxRSS = max(maxRSS, ru.Maxrss) // KiB on Linux
			}
		}
		b.ReportMetric(float64(maxRSS)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(len(srv.Requests()))/float64(b.N), "requests/op")
	})

	b.Run("99-files", func(b *testing.B) {
		srv.ResetRequests()
		for b.Loop() {
			run(b, 2)
		}
		b.ReportMetric(float64(len(srv.Requests()))/float64(b.N), "requests/op")
	})
}
