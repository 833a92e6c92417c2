package cli

import (
	"cmp"
	"errors"
	"github.com/baton-agent/baton/internal/fsstore"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/queue"

	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// result is one baton invocation's outcome.
type result struct {
	stdout, stderr string
	code           int
}

// env is a test project: a directory, a clock, and environment.
type env struct {
	t    *testing.T
	dir  string
	now  time.Time
	vars map[string]string
	// data, when set, holds the delivery database and files.
	data string
	// exe, when set, is the path baton believes it runs from.
	exe string
	// stderr, when set, also gets what a command writes on stderr, as it
	// writes it.
	stderr io.Writer
	// agentEnv is added to the environment of the agents and commands
	// baton starts (Factory.AgentEnv): a stand-in agent's PATH.
	agentEnv []string
}

// setEnv sets KEY=value pairs in e's environment.
func (e *env) setEnv(kvs ...string) {
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		e.vars[k] = v
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{t: t, dir: t.TempDir(), now: time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC), vars: map[string]string{}}
}

func (e *env) git(args ...string) string {
	e.t.Helper()
	return gittest.Output(e.t, e.dir, args...)
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// indexPath is name in the store's per-machine directory, relative to
// e.dir.
func (e *env) indexPath(name string) string {
	e.t.Helper()
	rel, err := filepath.Rel(e.dir, filepath.Join(fsstore.Open(e.dir, fsstore.Options{}).IndexDir(), name))
	if err != nil {
		e.t.Fatal(err)
	}
	return rel
}

// gitRepo makes e.dir a repository with one commit.
func (e *env) gitRepo() {
	e.t.Helper()
	e.git("init", "-q", "-b", "main")
	e.write("README.md", "# app\n")
	e.write("internal/auth/jwt.go", "package auth\n")
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "initial commit")
}

// run runs baton in subdir of the project with stdin.
func (e *env) run(subdir, stdin string, args ...string) result {
	e.t.Helper()
	return e.runCtx(context.Background(), subdir, stdin, args...)
}

// runCtx is run until ctx ends.
func (e *env) runCtx(ctx context.Context, subdir, stdin string, args ...string) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	var errw io.Writer = &errb
	if e.stderr != nil {
		errw = io.MultiWriter(&errb, e.stderr)
	}
	f := &Factory{
		IO:         IO{In: strings.NewReader(stdin), Out: &out, Err: errw},
		Now:        func() time.Time { return e.now },
		Getenv:     func(k string) string { return e.vars[k] },
		WorkDir:    filepath.Join(e.dir, subdir),
		Version:    "test",
		Executable: cmp.Or(e.exe, "/opt/baton/bin/baton"),
		AgentEnv:   e.agentEnv,
	}
	wireForTest(f, e.data)
	code := Main(ctx, args, f)
	return result{out.String(), errb.String(), code}
}

func (e *env) ok(subdir, stdin string, args ...string) result {
	e.t.Helper()
	r := e.run(subdir, stdin, args...)
	if r.code != 0 {
		e.t.Fatalf("baton %v exited %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// scrub replaces the temp dir so goldens are stable.
func (e *env) scrub(s string) string { return strings.ReplaceAll(s, e.dir, "$ROOT") }

// wireForTest gives f the real adapters cmd/baton gives it, on the test's
// own environment (f.Getenv): GitHub access, and the delivery service on
// the SQLite database in data.
func wireForTest(f *Factory, data string) {
	gh := github.Access{Getenv: f.Getenv, UserAgent: "baton/test"}
	f.GitHub = func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error) {
		return gh.Client(ctx, repo, apiURL)
	}
	f.Deliveries = func(ctx context.Context, o DeliveriesOptions) (*delivery.Service, error) {
		if data == "" && o.DB == "" {
			return nil, errors.New("test has no delivery data directory")
		}
		dsn := o.DB
		if dsn == "" {
			dsn = filepath.Join(data, "baton.db")
		}
		hosts, err := github.HostsFromEnv(f.Getenv)
		if err != nil {
			return nil, err
		}
		q, err := queue.Open(ctx, dsn, queue.Config{
			Workers: o.Workers, ID: o.WorkerID, FetchPollInterval: o.Poll, RescueStuckJobsAfter: o.RescueAfter,
		})
		if err != nil {
			return nil, err
		}
		return &delivery.Service{
			Queue: q, DataDir: filepath.Dir(dsn), DefaultAgent: f.Getenv("BATON_AGENT"), Now: f.Now, GitHubHosts: hosts,
			GitHub: func(ctx context.Context, repo github.Repo) (*github.Client, error) {
				return gh.Client(ctx, repo, "")
			},
		}, nil
	}
}

// useFake makes agents started in-process and by helper processes find
// the fake (PATH and its script), and lets a confined fake keep its
// state beside its script, as BATON_SANDBOX_WRITE does for the real
// binary. The process's own environment is left alone, so tests that use
// fakes run side by side.
func (e *env) useFake(fake *agenttest.Fake) {
	e.t.Helper()
	e.agentEnv = append(e.agentEnv, fake.Env()...)
	e.allowWrite(filepath.Dir(fake.Script))
}

// allowWrite lets confined agents and commands write dir, as
// --sandbox-write does: where a test's agent leaves what it saw.
func (e *env) allowWrite(dir string) {
	if w := e.vars["BATON_SANDBOX_WRITE"]; w != "" {
		dir = w + string(filepath.ListSeparator) + dir
	}
	e.vars["BATON_SANDBOX_WRITE"] = dir
}

// childEnv is the environment of a helper process that runs baton as
// e does in-process: the process's own, e's variables, and the
// environment e gives agents (a helper's agents inherit it).
func (e *env) childEnv(extra ...string) []string {
	env := append(os.Environ(), e.agentEnv...)
	for k, v := range e.vars {
		env = append(env, k+"="+v)
	}
	return append(env, extra...)
}
