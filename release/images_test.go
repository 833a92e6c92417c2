package release_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testenv"
)

// The images, as the snapshot built them through GoReleaser's dockers_v2
// with podman standing in for docker buildx: the configuration a release
// builds, from the snapshot's own binaries and nothing the workflow adds.

// image is the snapshot's image of GoReleaser's id ("serve", "worker"),
// skipping the test when the snapshot built none.
func image(t *testing.T, r release, id string) string {
	t.Helper()
	if !r.images {
		t.Skip("the snapshot built no images (it needs podman and a Debian root from debootstrap)")
	}
	return imageRepos[id] + ":" + r.version + "-" + runtime.GOARCH
}

// GoReleaser tags each image with its version and nothing else: `latest`
// is release/publish.sh's to move, once every channel has built and never
// for a prerelease (TestPublish).
func TestImageTags(t *testing.T) {
	t.Parallel()
	r := readRelease(t)
	for id, repo := range imageRepos {
		want := image(t, r, id)
		out := mustPodman(t, "images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", "reference="+repo)
		tags := strings.Fields(out)
		found := false
		for _, tag := range tags {
			found = found || strings.TrimPrefix(tag, "localhost/") == want
			if strings.Contains(tag, ":latest") {
				t.Errorf("GoReleaser tagged %s: latest would move before the release is published", tag)
			}
		}
		if !found {
			t.Errorf("no %s among %v", want, tags)
		}
	}
}

// The serve image, from scratch: a non-root user, the /data volume, OCI
// labels, Debian's CA bundle (made in the Dockerfile, not copied in by the
// workflow); it answers /readyz, and `baton healthcheck` inside it passes
// (and fails against nothing).
func TestServeImage(t *testing.T) {
	t.Parallel()
	r := readRelease(t)
	tag := image(t, r, "serve")
	out, err := podman(t, "image", "inspect", "--format", "{{.Config.User}}|{{json .Config.Volumes}}|{{index .Config.Labels \"org.opencontainers.image.version\"}}|{{json .Config.Healthcheck}}", tag)
	if err != nil || !strings.HasPrefix(out, "65532:65532|") || !strings.Contains(out, `"/data"`) || !strings.Contains(out, "|"+r.version+"|") || !strings.Contains(out, "healthcheck") {
		t.Errorf("image config: %q, %v; want user 65532, the /data volume, the version label and the healthcheck", out, err)
	}
	ctr := strings.TrimSpace(mustPodman(t, "create", tag))
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", ctr) })
	ca := filepath.Join(t.TempDir(), "ca.crt")
	mustPodman(t, "cp", ctr+":/etc/ssl/certs/ca-certificates.crt", ca)
	if b, err := os.ReadFile(ca); err != nil || strings.Count(string(b), "BEGIN CERTIFICATE") < 50 {
		t.Errorf("the image's CA bundle: %v, %d certificates", err, strings.Count(string(b), "BEGIN CERTIFICATE"))
	}

	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	name := fmt.Sprintf("baton-test-serve-%d", port)
	mustPodman(t, "run", "-d", "--name", name, "--network", "host", tag, "serve", "--addr", addr, "--workers", "0")
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", name) })
	waitReady(t, "http://"+addr)
	if out, err := podman(t, "exec", name, "/usr/bin/baton", "healthcheck", "--ready", "--addr", addr); err != nil || !strings.Contains(out, "ok") {
		t.Errorf("baton healthcheck --ready in the container: %v %q", err, out)
	}
	if out, err := podman(t, "exec", name, "/usr/bin/baton", "healthcheck", "--addr", "127.0.0.1:1"); err == nil {
		t.Errorf("healthcheck of nothing passed: %q", out)
	}
}

// standIn is docs/agents.md's stand-in agent.
const standIn = `#!/bin/sh
cat >/dev/null
case "$BATON_PHASE" in
plan)      echo "1. Add hello.txt with a greeting." ;;
implement) echo "hello" > hello.txt; echo "Added hello.txt." ;;
review)    echo '{"verdict": "pass", "summary": "hello.txt is there.", "feedback": ""}' ;;
esac
`

// The worker image: Node.js 22 and the agent CLIs at the versions the
// real-harness tests run (its size logged, for docs/release.md), baton
// and baton-hook where hooks find them, and `baton serve` with a worker
// inside it carrying a delivery on a mounted repository, with the
// stand-in agent, from plan to a merge on main.
func TestWorkerImage(t *testing.T) {
	t.Parallel()
	r := readRelease(t)
	tag := image(t, r, "worker")
	pins := workerPins(t)
	size := strings.TrimSpace(mustPodman(t, "image", "inspect", "--format", "{{.Size}}", tag))
	if n, err := strconv.ParseInt(size, 10, 64); err == nil {
		t.Logf("the worker image is %d MB (%s)", n/1e6, tag)
	}
	exec := func(args ...string) string {
		t.Helper()
		return mustPodman(t, append([]string{"run", "--rm", "--entrypoint", args[0], tag}, args[1:]...)...)
	}
	if got := strings.TrimSpace(exec("node", "--version")); got != "v"+pins["NODE_VERSION"] {
		t.Errorf("node --version = %q, want v%s", got, pins["NODE_VERSION"])
	}
	for _, c := range []struct{ bin, version string }{{"claude", pins["claude"]}, {"codex", pins["codex"]}} {
		if got := exec(c.bin, "--version"); !strings.Contains(got, c.version) {
			t.Errorf("%s --version = %q, want %s", c.bin, got, c.version)
		}
	}
	checkHooks(t, r, func(script string) (string, error) {
		return podman(t, "run", "--rm", "--entrypoint", "sh", tag, "-c", script)
	})

	work := t.TempDir()
	repoDir := filepath.Join(work, "app")
	writeFile(t, filepath.Join(repoDir, "README.md"), "# app\n", 0o644)
	writeFile(t, filepath.Join(work, "agent.sh"), standIn, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "initial"}} {
		cmd := execCommand("git", args...)
		cmd.Dir = repoDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// The container's user (10001) works in the repository.
	if out, err := execCommand("chown", "-R", "10001:10001", work).CombinedOutput(); err != nil {
		t.Skipf("cannot hand the repository to the container's user: %v %s", err, out)
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	name := fmt.Sprintf("baton-test-worker-%d", port)
	mustPodman(t, "run", "-d", "--name", name, "--network", "host", "-v", work+":/work",
		"-e", "GIT_AUTHOR_NAME=t", "-e", "GIT_AUTHOR_EMAIL=t@example.com", "-e", "GIT_COMMITTER_NAME=t", "-e", "GIT_COMMITTER_EMAIL=t@example.com",
		"-w", "/work/app", tag, "serve", "--addr", addr, "--workers", "1", "--agent", "command:/work/agent.sh", "--poll", "100ms")
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", name) })
	url := "http://" + addr
	waitReady(t, url)
	tok := strings.TrimSpace(mustPodman(t, "exec", name, "cat", "/data/api-token"))
	id := createDelivery(t, url, tok, `{"repo":"/work/app","summary":"Add a greeting","checkpoints":[]}`)
	d := waitDelivery(t, url, id, func() string { out, _ := podman(t, "logs", name); return out })
	if d.Phase != "close" || d.RunStatus != "succeeded" {
		logs, _ := podman(t, "logs", name)
		t.Fatalf("the delivery ended %+v\n%s", d, tail(logs))
	}
	cmd := execCommand("git", "-c", "safe.directory=*", "show", "main:hello.txt")
	cmd.Dir = repoDir
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "hello\n" {
		t.Errorf("main:hello.txt = %q, %v", out, err)
	}
}

var execCommand = exec.Command

// createDelivery creates a delivery through the API and returns its id.
func createDelivery(t *testing.T, url, token, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/api/deliveries", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct {
		Delivery struct{ ID string } `json:"delivery"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	if resp.StatusCode != http.StatusCreated || created.Delivery.ID == "" {
		t.Fatalf("POST /api/deliveries = %d, %+v", resp.StatusCode, created)
	}
	return created.Delivery.ID
}

type deliveryState struct {
	Phase     string `json:"phase"`
	RunStatus string `json:"run_status"`
	Error     string `json:"error"`
}

// waitDelivery waits until the delivery closes or fails.
func waitDelivery(t *testing.T, url, id string, logs func() string) deliveryState {
	t.Helper()
	var d struct {
		Delivery deliveryState `json:"delivery"`
	}
	if !testenv.Until(2*time.Minute, nil, func() bool {
		resp, err := http.Get(url + "/api/deliveries/" + id)
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&d)
			resp.Body.Close()
		}
		return d.Delivery.Phase == "close" || d.Delivery.RunStatus == "failed"
	}) {
		t.Fatalf("the delivery did not close within 2m: %+v\n%s", d.Delivery, tail(logs()))
	}
	return d.Delivery
}

// workerPins are the versions deploy/images/worker.Dockerfile pins:
// its ARGs by name, and "claude" and "codex" from AGENTS.
func workerPins(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "deploy", "images", "worker.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG ([A-Z0-9_]+)=(.*)$`).FindAllStringSubmatch(string(b), -1) {
		pins[m[1]] = strings.Trim(m[2], `"`)
	}
	for _, pkg := range strings.Fields(pins["AGENTS"]) {
		switch {
		case strings.HasPrefix(pkg, "@anthropic-ai/claude-code@"):
			pins["claude"] = strings.TrimPrefix(pkg, "@anthropic-ai/claude-code@")
		case strings.HasPrefix(pkg, "@openai/codex@"):
			pins["codex"] = strings.TrimPrefix(pkg, "@openai/codex@")
		}
	}
	return pins
}

// The worker image carries the agent CLIs and the Node.js that the
// real-harness tests run (cmd/baton/harness_setup_test.go), so what
// the image ships is what those tests proved.
func TestWorkerImagePins(t *testing.T) {
	t.Parallel()
	pins := workerPins(t)
	path := filepath.Join(repo, "cmd", "baton", "harness_setup_test.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	var node string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) {
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		case *ast.CallExpr:
			// harnesstest.NodeDir(t, "22.23.3")
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NodeDir" && len(n.Args) == 2 {
				if lit, ok := n.Args[1].(*ast.BasicLit); ok {
					node, _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	for _, c := range []struct{ pin, tested, what string }{
		{pins["claude"], consts["claudeVersion"], "Claude Code"},
		{pins["codex"], consts["codexVersion"], "Codex"},
		{pins["NODE_VERSION"], node, "Node.js"},
	} {
		if c.pin == "" || c.pin != c.tested {
			t.Errorf("the worker image pins %s %q; the real-harness tests run %q", c.what, c.pin, c.tested)
		}
	}
}

// docsBlock is the sh code block of docs/deploy.md that follows the line
// holding marker.
func docsBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("docs/deploy.md has no %q", marker)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatalf("no sh block after %q in docs/deploy.md", marker)
	}
	return block
}

// docs/deploy.md's container recipe, run as written: a person (uid 1000
// here) makes a token file of mode 0600 and a data directory of their
// own, and the serve image, run as them, reads the token (a change
// through the API with it is accepted, without it refused) and keeps its
// data in their directory.
func TestDeployContainerRecipe(t *testing.T) {
	t.Parallel()
	r := readRelease(t)
	tag := image(t, r, "serve")
	need(t, "setpriv")
	const uid = "1000"
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "person")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := execCommand("chown", uid+":"+uid, work).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	files := exec.Command("setpriv", "--reuid="+uid, "--regid="+uid, "--clear-groups", "sh", "-euc", docsBlock(t, "<!-- recipe: container files -->"))
	files.Dir, files.Env = work, append(os.Environ(), "HOME="+work, "PWD="+work)
	if out, err := files.CombinedOutput(); err != nil {
		t.Fatalf("the recipe's files, as uid %s: %v\n%s", uid, err, out)
	}
	if fi, err := os.Stat(filepath.Join(work, "api-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the recipe's api-token: %v %v, want mode 0600", err, fi)
	}

	// `docker run` as the person would type it; podman (rootful, as
	// docker is) stands for docker, and id answers for the person since
	// the test runs as root.
	port := freePort(t)
	name := fmt.Sprintf("baton-test-recipe-%d", port)
	run := docsBlock(t, "<!-- recipe: container run -->")
	run = strings.ReplaceAll(run, "ghcr.io/baton-agent/baton:0.1.0", tag)
	run = strings.ReplaceAll(run, "--name baton ", "--name "+name+" ")
	run = strings.ReplaceAll(run, "exec baton ", "exec "+name+" ")
	run = strings.ReplaceAll(run, "-p 7070:7070", fmt.Sprintf("-p 127.0.0.1:%d:7070", port))
	shims := t.TempDir()
	writeFile(t, filepath.Join(shims, "docker"), "#!/bin/sh\nexec podman "+strings.Join(podmanArgs(), " ")+` "$@"`+"\n", 0o755)
	writeFile(t, filepath.Join(shims, "id"), "#!/bin/sh\necho "+uid+"\n", 0o755)
	conf, err := podmanConf()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", name) })
	cmd := exec.Command("sh", "-euc", run)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf, "PWD="+work, "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		logs, _ := podman(t, "logs", name)
		t.Fatalf("the recipe's docker run: %v\n%s\n%s", err, out, tail(logs))
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitReady(t, url)
	token, err := os.ReadFile(filepath.Join(work, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {strings.TrimSpace(string(token)), http.StatusNotFound}} {
		req, _ := http.NewRequest("POST", url+"/api/deliveries/no-such-delivery/cancel", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("a change with token %q = %d, want %d", c.token, resp.StatusCode, c.want)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(work, "baton-data")); err != nil || len(entries) == 0 {
		t.Errorf("the data directory holds %v (%v): the server keeps nothing there", entries, err)
	}
}
