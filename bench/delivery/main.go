// Command delivery measures the delivery pipeline's orchestration
// overhead on SQLite: N deliveries go through every phase (plan,
// implement, review, verify, deploy, observe, close) on a local
// repository, with an agent that answers at once (a tiny sh script as a
// command:<argv> agent) and verify/observe commands that are `true`, so
// what is measured is baton: claiming jobs, git worktrees and pushes,
// merges, state changes and the queue.
//
//	go run ./bench/delivery -n 200 -workers 1,4
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
)

// agentScript answers as planner, implementer or reviewer at once. The
// implementer writes a file named after its delivery (the worktree is
// .../worktrees/<id>/attempt-N-implement), so merges never conflict.
const agentScript = `#!/bin/sh
prompt=$(cat)
case "$prompt" in
*"You are the reviewer"*) echo '{"verdict":"pass","summary":"ok","feedback":""}' ;;
*"You are the planner"*) echo "1. Write the file." ;;
*) id=$(basename "$(dirname "$PWD")"); echo "$id" > "work-$id.txt"; echo done ;;
esac
`

func main() {
	n := flag.Int("n", 200, "deliveries")
	workersFlag := flag.String("workers", "1,4", "worker counts to measure, comma-separated")
	keep := flag.Bool("keep", false, "keep the temporary directories")
	flag.Parse()
	for _, w := range strings.Split(*workersFlag, ",") {
		workers, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || workers < 1 {
			fmt.Fprintf(os.Stderr, "bad -workers %q\n", w)
			os.Exit(2)
		}
		res, err := run(*n, workers, *keep)
		if err != nil {
			fmt.Fprintf(os.Stderr, "workers=%d: %v\n", workers, err)
			os.Exit(1)
		}
		fmt.Println(res)
	}
}

type result struct {
	deliveries, workers, jobs, transitions int
	create, total                          time.Duration
	agentTotal                             time.Duration
	agentRuns                              int
}

func (r result) String() string {
	return fmt.Sprintf("workers=%d deliveries=%d jobs=%d transitions=%d create=%s (%.2f ms/delivery) pipeline=%s jobs/s=%.1f per-job=%.1f ms per-transition=%.2f ms agent-runs=%d mean-agent-run=%.1f ms",
		r.workers, r.deliveries, r.jobs, r.transitions, r.create.Round(time.Millisecond),
		float64(r.create.Microseconds())/1000/float64(r.deliveries), r.total.Round(time.Millisecond),
		float64(r.jobs)/r.total.Seconds(), float64(r.total.Microseconds())/1000/float64(r.jobs),
		float64(r.total.Microseconds())/1000/float64(r.transitions), r.agentRuns,
		float64(r.agentTotal.Microseconds())/1000/float64(max(r.agentRuns, 1)))
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

func run(n, workers int, keep bool) (result, error) {
	res := result{deliveries: n, workers: workers}
	tmp, err := os.MkdirTemp("", "baton-bench-delivery-")
	if err != nil {
		return res, err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
		"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"} {
		os.Setenv(k, v)
	}
	// The source: a bare repository with one commit on main, as on a server.
	seed := filepath.Join(tmp, "seed")
	src := filepath.Join(tmp, "src.git")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# bench\n"), 0o644); err != nil {
		return res, err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "seed"}, {"clone", "-q", "--bare", seed, src}} {
		if err := git(seed, args...); err != nil {
			return res, err
		}
	}
	script := filepath.Join(tmp, "agent.sh")
	if err := os.WriteFile(script, []byte(agentScript), 0o755); err != nil {
		return res, err
	}
	data := filepath.Join(tmp, "data")
	ctx := context.Background()
	q, err := queue.Open(ctx, filepath.Join(data, "baton.db"), queue.Config{Workers: workers, FetchPollInterval: 20 * time.Millisecond})
	if err != nil {
		return res, err
	}
	defer q.Close()
	svc := &delivery.Service{Queue: q, DataDir: data}
	runner := &delivery.Runner{Service: svc, Owner: "bench", PollEvery: 200 * time.Millisecond}

	cfg := baton.DeliveryConfig{Agent: "command:" + script, PhaseTimeout: time.Minute, MaxRounds: 5,
		VerifyCommand: "true", ObserveCommand: "true", ObserveWindow: time.Millisecond, ObserveEvery: time.Millisecond}
	ids := make([]string, 0, n)
	start := time.Now()
	for i := range n {
		summary := fmt.Sprintf("Bench delivery %d", i)
		d := baton.Delivery{
			ID: baton.DeliveryID(src, summary), Summary: summary, Repository: src, Forge: baton.ForgeLocal,
			Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{}, Config: cfg,
			Refs: []baton.Ref{{Role: baton.RoleRequest, Type: "summary", Label: summary}},
		}
		got, _, err := svc.Insert(ctx, d, "bench")
		if err != nil {
			return res, err
		}
		ids = append(ids, got.ID)
	}
	res.create = time.Since(start)

	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start = time.Now()
	go func() { done <- q.Run(wctx, runner.Work) }()
	for {
		closed, failed, err := count(ctx, svc)
		if err != nil {
			cancel()
			return res, err
		}
		if failed != "" {
			cancel()
			<-done
			return res, fmt.Errorf("a delivery failed: %s", failed)
		}
		if closed == n {
			break
		}
		// Poll gently: the benchmark must not steal the one SQLite
		// connection from the workers it measures.
		time.Sleep(100 * time.Millisecond)
	}
	res.total = time.Since(start)
	cancel()
	if err := <-done; err != nil {
		return res, err
	}
	for _, id := range ids {
		log, err := svc.Store().PhaseLog(ctx, id)
		if err != nil {
			return res, err
		}
		res.transitions += len(log)
		for _, e := range log {
			if e.Status == baton.StatusRunning {
				res.jobs++
			}
		}
		runs, err := svc.Store().AgentRuns(ctx, id)
		if err != nil {
			return res, err
		}
		for _, r := range runs {
			res.agentRuns++
			res.agentTotal += r.Duration
		}
	}
	return res, nil
}

func count(ctx context.Context, svc *delivery.Service) (closed int, failed string, err error) {
	ds, err := svc.Store().FindDeliveries(ctx, baton.DeliveryFilter{Phase: baton.PhaseClose})
	if err != nil {
		return 0, "", err
	}
	for _, s := range []baton.RunStatus{baton.StatusFailed, baton.StatusBlocked} {
		bad, err := svc.Store().FindDeliveries(ctx, baton.DeliveryFilter{RunStatus: s})
		if err != nil {
			return 0, "", err
		}
		if len(bad) > 0 {
			return 0, fmt.Sprintf("%s is %s: %s", bad[0].ID, bad[0].String(), bad[0].Error), nil
		}
	}
	return len(ds), "", nil
}
