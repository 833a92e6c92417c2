package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
)

// unit is what a test needs of a systemd unit: its ExecStart argv, its
// Environment= assignments and the names of its LoadCredential= files.
type unit struct {
	argv  []string
	env   []string
	creds []string
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var u unit
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			u.argv = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			u.env = append(u.env, v)
		}
		if v, ok := strings.CutPrefix(line, "LoadCredential="); ok {
			name, _, _ := strings.Cut(v, ":")
			u.creds = append(u.creds, name)
		}
	}
	// Where the deb and rpm put baton.
	if len(u.argv) < 2 || u.argv[0] != "/usr/bin/baton" {
		t.Fatalf("%s: ExecStart = %q, want /usr/bin/baton ...", path, u.argv)
	}
	return u
}

// credentials is what systemd makes of a unit's LoadCredential= lines: a
// directory holding one file per credential that is in the credential
// store (values; "" for one baton reads that this test leaves out, as
// systemd leaves out a missing one), for CREDENTIALS_DIRECTORY. A
// credential baton does not read fails the test.
func credentials(t *testing.T, u unit, values map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range u.creds {
		v, ok := values[name]
		if !ok {
			t.Fatalf("the unit loads credential %q, which baton does not read", name)
		}
		if v == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withFlag returns argv with the value of flag replaced.
func withFlag(t *testing.T, argv []string, flag, value string) []string {
	t.Helper()
	i := slices.Index(argv, flag)
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("%q has no %s", argv, flag)
	}
	out := slices.Clone(argv)
	out[i+1] = value
	return out
}

// The deployment recipe of docs/deploy.md, run as written: the systemd
// units' command lines start `baton serve` (API only, on a non-loopback
// address with a token) and `baton worker` with its own data directory,
// both on one PostgreSQL database; a delivery created through the API is
// run by the worker to the end; SIGTERM stops both cleanly. The
// Kubernetes manifest's containers run the same commands.
func TestDeployRecipe(t *testing.T) {
	t.Parallel()
	dsn := sqlstoretest.DSN(t, sqlstore.Postgres)
	serveUnit := readUnit(t, filepath.Join("..", "..", "deploy", "systemd", "baton-serve.service"))
	workerUnit := readUnit(t, filepath.Join("..", "..", "deploy", "systemd", "baton-worker.service"))
	checkManifest(t, filepath.Join("..", "..", "deploy", "kubernetes", "baton.yaml"), serveUnit.argv[1:], workerUnit.argv[1:])

	const token = "deploy-test-token-0123456789"
	home := t.TempDir()
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(concurrentAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	base := gitEnv(home, "BATON_ACTOR=tester")
	src := userRepo(t, base)
	// The secrets come as systemd gives them: files in a credentials
	// directory, not variables.
	secrets := map[string]string{"database-url": dsn, "api-token": token, "webhook-secret": "deploy-webhook-secret", "github-token": "ghp_deploy_test",
		"github-app-key": "", "notify-webhook-secret": "", "notify-slack-url": ""}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	serveEnv := append(slices.Clone(base), serveUnit.env...)
	serveEnv = append(serveEnv, "BATON_DATA_DIR="+t.TempDir(), "CREDENTIALS_DIRECTORY="+credentials(t, serveUnit, secrets), "BATON_AGENT=command:"+agent)
	serve := exec.Command(batonBin, withFlag(t, serveUnit.argv[1:], "--addr", fmt.Sprintf("0.0.0.0:%d", port))...)
	serve.Dir, serve.Env = src, serveEnv
	var serveOut bytes.Buffer
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			_ = serve.Process.Kill()
			_ = serve.Wait()
		}
	})
	workerEnv := append(slices.Clone(base), workerUnit.env...)
	workerEnv = append(workerEnv, "BATON_DATA_DIR="+t.TempDir(), "CREDENTIALS_DIRECTORY="+credentials(t, workerUnit, secrets))
	worker := startWorker(t, workerEnv, append(workerUnit.argv[2:], "--poll", "100ms")...)

	api := fmt.Sprintf("http://127.0.0.1:%d", port)
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, api+path, r)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if !testenv.Until(30*time.Second, nil, func() bool { code, _ := call("GET", "/readyz", nil); return code == http.StatusOK }) {
		t.Fatalf("serve not ready after 30s\n%s", serveOut.String())
	}
	code, created := call("POST", "/api/deliveries", map[string]any{"repo": src, "summary": "Deployed delivery", "checkpoints": []string{}, "endpoint": "deploy"})
	if code != http.StatusCreated {
		t.Fatalf("POST /api/deliveries = %d %v\n%s", code, created, serveOut.String())
	}
	d, _ := created["delivery"].(map[string]any)
	id, _ := d["id"].(string)
	if id == "" {
		t.Fatalf("POST /api/deliveries answered %v", created)
	}
	var got map[string]any
	if !testenv.Until(2*time.Minute, nil, func() bool {
		_, got = call("GET", "/api/deliveries/"+id, nil)
		d, _ := got["delivery"].(map[string]any)
		return d != nil && d["phase"] == "close"
	}) {
		t.Fatalf("delivery %s not closed after 2m: %v\nworker:\n%s", id, got, worker.output())
	}
	if d, _ := got["delivery"].(map[string]any); d["run_status"] != "succeeded" {
		t.Fatalf("delivery closed %v: %v", d["run_status"], d["error"])
	}
	if out := gitOut(t, src, "show", "main:baton-"+id+".txt"); out != "baton-"+id {
		t.Errorf("main:baton-%s.txt = %q", id, out)
	}

	worker.stop(t)
	_ = serve.Process.Signal(os.Interrupt)
	if err := serve.Wait(); err != nil {
		t.Errorf("serve did not stop cleanly: %v\n%s", err, serveOut.String())
	}
	if strings.Contains(serveOut.String(), token) {
		t.Errorf("serve printed its token:\n%s", serveOut.String())
	}
}

// checkManifest checks that the Kubernetes manifest runs the units'
// commands, so the two recipes cannot drift apart.
func checkManifest(t *testing.T, path string, serveArgs, workerArgs []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	containers := map[string][]string{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name  string
							Image string
							Args  []string
							Env   []struct {
								Name, Value string
							}
						}
					}
				}
			}
		}
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, c := range doc.Spec.Template.Spec.Containers {
			containers[c.Name] = c.Args
			// The release's images, by a version tag (never latest).
			want := map[string]string{"serve": "ghcr.io/baton-agent/baton:", "worker": "ghcr.io/baton-agent/baton-worker:"}[c.Name]
			if tag, ok := strings.CutPrefix(c.Image, want); !ok || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(tag) {
				t.Errorf("%s: container %s runs image %q, want %s<version>", path, c.Name, c.Image, want)
			}
			for _, e := range c.Env {
				if !strings.HasSuffix(e.Name, "_FILE") {
					continue
				}
				want := map[string]string{"BATON_DATABASE_URL_FILE": "database-url", "BATON_API_TOKEN_FILE": "api-token",
					"BATON_WEBHOOK_SECRET_FILE": "webhook-secret", "BATON_GITHUB_TOKEN_FILE": "github-token"}[e.Name]
				if want == "" || filepath.Base(e.Value) != want {
					t.Errorf("%s: %s names %s; baton reads a secret file from BATON_{DATABASE_URL,API_TOKEN,WEBHOOK_SECRET,GITHUB_TOKEN}_FILE, and the secret's key is %q", path, e.Name, e.Value, want)
				}
			}
		}
	}
	if !slices.Equal(containers["serve"], serveArgs) {
		t.Errorf("%s: serve args %q, the systemd unit runs %q", path, containers["serve"], serveArgs)
	}
	if !slices.Equal(containers["worker"], workerArgs) {
		t.Errorf("%s: worker args %q, the systemd unit runs %q", path, containers["worker"], workerArgs)
	}
}
