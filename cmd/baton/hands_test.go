package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// These tests are about baton's own hands: what baton itself does, outside
// the agent's sandbox, in a worktree the agent just wrote. The agent is a
// command agent under the real `baton serve` that leaves a trap for
// baton's next git command or file write, chosen by the word in the
// delivery's summary; the test then checks that the trap caught nothing.

// handsAgent plans, implements and passes review like an honest agent,
// and lays one trap on the way, named in the summary ("Trap-<name>"):
//
//   - fsmonitor: a repository nested in the worktree by the planner, whose
//     core.fsmonitor marks that it ran (nested/.git/sprung), reads the API
//     token and git's environment, writes them into the evidence directory
//     and approves the victim with the token (implement's git add runs it);
//   - editmsg: COMMIT_EDITMSG a link to the API token;
//   - reflog: logs/HEAD a link to a file at home;
//   - docs: docs a link to a directory outside the worktree;
//   - fifo: the index a named pipe, and a .gitignore (git reads both);
//   - commondir: commondir naming the worktree, .git removed, and a
//     packed-refs file there that git cannot read;
//   - bidi: code whose bidirectional controls and zero-width space make
//     it read differently from what it does.
//
// Values come from the summary as "<key> <value>" words.
const handsAgent = `#!/bin/sh
prompt=$(cat)
wt=$(pwd)
data=$(dirname "$(dirname "$wt")")
gitdir=$(git rev-parse --absolute-git-dir 2>/dev/null)
arg() { printf '%s' "$prompt" | sed -n "s/.* $1 \([^ ]*\) .*/\1/p" | head -n 1; }
trap=$(printf '%s' "$prompt" | sed -n 's/.*Trap-\([a-z]*\).*/\1/p' | head -n 1)
case "$BATON_PHASE:$trap" in
review:*) echo '{"verdict":"pass","summary":"fine","feedback":""}'; exit 0 ;;
plan:editmsg) ln -sf "$data/api-token" "$gitdir/COMMIT_EDITMSG" ;;
plan:reflog) mkdir -p "$gitdir/logs" && ln -sf "$(arg home)/.bashrc" "$gitdir/logs/HEAD" ;;
plan:docs) rm -rf docs && ln -s "$(arg outside)" docs ;;
implement:fifo) rm -f "$gitdir/index"; mkfifo "$gitdir/index"; mkdir -p sub && mkfifo sub/.gitignore ;;
implement:commondir) echo "$wt" > "$gitdir/commondir" && rm -f .git && echo garbage > packed-refs ;;
implement:bidi) printf 'package p\n\n/* \342\200\256 } \342\201\246if isAdmin\342\201\251 \342\201\246 begin admins only */\nvar a\342\200\213b = 1\n' > access.go ;;
plan:fsmonitor)
	ev=$(arg evidence); api=$(arg api); victim=$(arg victim)
	mkdir nested && cd nested && git init -q && echo nested > f && git add f &&
		git -c user.name=a -c user.email=a@example.com commit -qm nested || exit 1
	cat > .git/monitor <<EOF
#!/bin/sh
echo sprung > "$wt/nested/.git/sprung"
tok=\$(cat "$data/api-token" 2>/dev/null)
{ echo "token=\$tok"; env | grep -E '^(GH_TOKEN|GITHUB_TOKEN|GIT_CONFIG_VALUE_0)='; } > "$ev/fsmonitor" 2>/dev/null
curl -sf -o /dev/null -X POST -H "Authorization: Bearer \$tok" "$api/api/deliveries/$victim/approve"
exit 1
EOF
	chmod +x .git/monitor && git config core.fsmonitor "$wt/nested/.git/monitor" && cd .. ;;
esac
case "$BATON_PHASE" in
plan) echo "1. Write feature.txt." ;;
implement) echo "work of $trap" > "feature-$trap.txt"; echo "implemented" ;;
esac
`

// handsServe is a serve whose agent is handsAgent, with a GitHub token in
// its environment.
type handsServe struct {
	*hostileServe
	evidence, outside string
}

func newHandsServe(t *testing.T, extraEnv []string, args ...string) *handsServe {
	t.Helper()
	h := &handsServe{hostileServe: &hostileServe{t: t, home: t.TempDir(), data: t.TempDir()}}
	// A directory anyone may write: only an unconfined process can reach it.
	h.evidence = t.TempDir()
	h.outside = t.TempDir()
	if err := os.Chmod(h.evidence, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, ".bashrc"), []byte("# the user's shell\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(handsAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	h.env = gitEnv(h.home, append([]string{"BATON_DATA_DIR=" + h.data, "GH_TOKEN=ghp_hands_test_token", "GITHUB_TOKEN=ghp_hands_test_token"}, extraEnv...)...)
	h.repo = userRepo(t, h.env)
	h.serve, h.url = startServe(t, h.env, h.repo, append([]string{"--addr", "127.0.0.1:0", "--agent", "command:" + agent, "--poll", "100ms", "--workers", "2"}, args...)...)
	tok, err := os.ReadFile(filepath.Join(h.data, "api-token"))
	if err != nil {
		t.Fatalf("no API token: %v\n%s", err, h.serve.output())
	}
	h.token = strings.TrimSpace(string(tok))
	return h
}

// closed waits until delivery id closes or fails, and fails the test
// unless it closed.
func (h *hostileServe) closed(id string) hostileDetail {
	h.t.Helper()
	d := h.wait(id, id+" to close", func(d hostileDetail) bool {
		return d.Delivery.Phase == "close" || d.Delivery.RunStatus == "failed"
	})
	if d.Delivery.Phase != "close" {
		h.t.Fatalf("%s did not close: %+v\n%s", id, d, h.serve.output())
	}
	return d
}

// mainFile is path as the source repository's main branch has it.
func (h *hostileServe) mainFile(path string) (string, error) {
	cmd := exec.Command("git", "show", "main:"+path)
	cmd.Dir, cmd.Env = h.repo, h.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func needSandbox(t *testing.T) {
	t.Helper()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine processes: %s", st.Why)
	}
}

// A repository the agent nests in its worktree, with core.fsmonitor set,
// runs nothing as baton: baton's next git status in the worktree reads
// neither the API token nor GH_TOKEN, writes nothing outside, and
// approves nothing. Item 1 of issue 32.
func TestAgentNestedFSMonitorReachesNothing(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	h := newHandsServe(t, nil)
	victim := h.create("Victim waits for a person", "implement")
	h.wait(victim, "the victim to wait for a person", func(d hostileDetail) bool {
		return d.Delivery.Phase == "implement" && d.Delivery.Waiting
	})
	id := h.create(fmt.Sprintf("Trap-fsmonitor evidence %s api %s victim %s end", h.evidence, h.url, victim), "verify")
	h.waitVerify(id)
	h.checkFSMonitorCaughtNothing(id, victim)
}

// waitVerify waits until delivery id waits for a person before verify,
// its worktree still there.
func (h *handsServe) waitVerify(id string) {
	h.t.Helper()
	h.wait(id, "the trap to wait for its verify checkpoint", func(d hostileDetail) bool {
		if d.Delivery.RunStatus == "failed" {
			h.t.Fatalf("the trap's delivery failed: %+v\n%s", d, h.serve.output())
		}
		return d.Delivery.Phase == "verify" && d.Delivery.Waiting
	})
}

func (h *handsServe) checkFSMonitorCaughtNothing(id, victim string) {
	t := h.t
	t.Helper()
	// The trap was sprung, confined: else this test shows nothing.
	if _, err := os.Stat(filepath.Join(h.data, "worktrees", id, "nested", ".git", "sprung")); err != nil {
		t.Errorf("the nested repository's fsmonitor never ran in baton's git (%v): this test shows nothing", err)
	}
	if b, err := os.ReadFile(filepath.Join(h.evidence, "fsmonitor")); err == nil {
		t.Errorf("the nested repository's fsmonitor ran unconfined as baton and wrote:\n%s", b)
	}
	v := h.wait(victim, "the victim to be read", func(hostileDetail) bool { return true })
	if v.Delivery.Phase != "implement" || !v.Delivery.Waiting {
		t.Errorf("the victim's checkpoint was approved without a person: %+v", v.Delivery)
	}
}

// The same through a GitHub source: the token baton pushes with (in
// git's environment for the remote) and GH_TOKEN in serve's own
// environment stay out of the worktree's git.
func TestAgentNestedFSMonitorGitHub(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	srv := githubtest.NewServer(t)
	srv.AddRepo("octo/app")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "Victim waits for a person"})
	remote := filepath.Join(t.TempDir(), "remote.git")
	h := newHandsServe(t, append(srv.Env(), "BATON_GITHUB_REMOTE_URL="+remote))
	gitIn(t, h.env, "", "clone", "-q", "--bare", h.repo, remote)
	create := func(body string) string {
		var created struct {
			Delivery struct {
				ID string `json:"id"`
			} `json:"delivery"`
		}
		if code := apiCall(t, "POST", h.url+"/api/deliveries", h.token, body, &created); code != http.StatusCreated {
			t.Fatalf("create %s = %d\n%s", body, code, h.serve.output())
		}
		return created.Delivery.ID
	}
	victim := create(`{"issue_url":"https://github.com/octo/app/issues/1","checkpoints":["implement"]}`)
	h.wait(victim, "the victim to wait for a person", func(d hostileDetail) bool {
		return d.Delivery.Phase == "implement" && d.Delivery.Waiting
	})
	srv.AddIssue("octo/app", githubtest.Issue{Number: 2, Title: fmt.Sprintf("Trap-fsmonitor evidence %s api %s victim %s end", h.evidence, h.url, victim)})
	// The trap is laid in plan; implement's git add runs the monitor.
	id := create(`{"issue_url":"https://github.com/octo/app/issues/2","checkpoints":["verify"]}`)
	h.waitVerify(id)
	h.checkFSMonitorCaughtNothing(id, victim)
	d := h.wait(id, "the trap's delivery to be read", func(hostileDetail) bool { return true })
	if d.Delivery.Phase != "verify" || !d.Delivery.Waiting {
		t.Errorf("the trap's own verify checkpoint was approved without a person: %+v", d.Delivery)
	}
}

// With --sandbox=off baton's git in the worktree runs unconfined, as the
// agent did, but still without a secret in its environment: the nested
// repository's fsmonitor runs (the control: it reads what the agent could
// read) and finds neither GH_TOKEN nor GITHUB_TOKEN.
func TestAgentNestedFSMonitorUnconfinedGetsNoSecrets(t *testing.T) {
	t.Parallel()
	h := newHandsServe(t, nil, "--sandbox", "off")
	id := h.create(fmt.Sprintf("Trap-fsmonitor evidence %s api %s victim none end", h.evidence, h.url))
	h.closed(id)
	b, err := os.ReadFile(filepath.Join(h.evidence, "fsmonitor"))
	if err != nil {
		t.Fatalf("unconfined, the nested repository's fsmonitor did not run (%v): this test shows nothing", err)
	}
	if strings.Contains(string(b), "ghp_hands_test_token") {
		t.Errorf("baton's unconfined git handed a GitHub token to the fsmonitor:\n%s", b)
	}
}

// gitIn runs git in dir and fails the test on an error.
func gitIn(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Links the agent leaves where git writes (COMMIT_EDITMSG, logs/HEAD) and
// where baton writes the plan (docs) lead nowhere: the API token, a file
// at home and a directory outside stay as they were, and each delivery
// still lands its work. Items 2 to 4 of issue 32.
func TestAgentLinksLeadBatonNowhere(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	h := newHandsServe(t, nil)
	tokenBefore := h.token
	ids := map[string]string{
		"editmsg": h.create("Trap-editmsg end"),
		"reflog":  h.create(fmt.Sprintf("Trap-reflog home %s end", h.home)),
		"docs":    h.create(fmt.Sprintf("Trap-docs outside %s end", h.outside)),
	}
	for trap, id := range ids {
		h.closed(id)
		if got, err := h.mainFile("feature-" + trap + ".txt"); err != nil || got != "work of "+trap+"\n" {
			t.Errorf("%s: main:feature-%s.txt = %q, %v", trap, trap, got, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(h.data, "api-token")); err != nil || strings.TrimSpace(string(b)) != tokenBefore {
		t.Errorf("the API token file holds %q (%v), want the token serve started with", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.home, ".bashrc")); string(b) != "# the user's shell\n" {
		t.Errorf("~/.bashrc = %q: git appended to it through logs/HEAD", b)
	}
	if entries, _ := os.ReadDir(h.outside); len(entries) != 0 {
		t.Errorf("the plan went outside the worktree through docs: %v", entries)
	}
}

// Named pipes the agent leaves where git reads (the index, a .gitignore)
// hang nothing: the delivery lands its work, and serve still stops on
// SIGTERM. Item 5.
func TestAgentFIFOIndexHangsNothing(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	h := newHandsServe(t, nil)
	id := h.create("Trap-fifo end")
	h.closed(id)
	if got, err := h.mainFile("feature-fifo.txt"); err != nil || got != "work of fifo\n" {
		t.Errorf("main:feature-fifo.txt = %q, %v", got, err)
	}
	h.stops()
}

// stops sends serve SIGTERM and fails the test unless it exits within 20 s.
func (h *hostileServe) stops() {
	h.t.Helper()
	if err := h.serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.serve.done:
	case <-time.After(20 * time.Second):
		h.t.Fatalf("serve did not stop within 20s of SIGTERM\n%s", h.serve.output())
	}
}

// One agent that breaks its worktree's registration (commondir naming its
// worktree, .git removed) breaks no other delivery: the next one's
// checkout of the repository works at once. Item 6.
func TestAgentBrokenRegistrationBlocksNoOne(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	h := newHandsServe(t, nil)
	// A checkpoint after implement keeps the broken registration as the
	// agent left it while another delivery checks out.
	id := h.create("Trap-commondir end", "implement")
	h.approveAll(id, "implement", 2)
	other := h.create("Another delivery of the repository")
	d := h.closed(other)
	for _, r := range d.AgentRuns {
		if r.Status != "succeeded" {
			t.Errorf("another delivery's %s run: %s %s", r.Phase, r.Status, r.Error)
		}
	}
	var log struct {
		Entries []struct {
			Phase, Status, Note string
		} `json:"phase_log"`
	}
	apiCall(t, "GET", h.url+"/api/deliveries/"+other, h.token, "", &log)
	for _, e := range log.Entries {
		if e.Status == "failed" {
			t.Errorf("another delivery's %s failed: %s", e.Phase, e.Note)
		}
	}
	// The trap's own delivery goes on too.
	if code := apiCall(t, "POST", h.url+"/api/deliveries/"+id+"/approve", h.token, "", nil); code != http.StatusOK {
		t.Fatalf("approve %s = %d", id, code)
	}
	h.closed(id)
}

// approveAll approves delivery id each time it waits at phase, n times:
// a checkpoint waits before its phase starts and again on its result.
func (h *hostileServe) approveAll(id, phase string, n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		h.wait(id, fmt.Sprintf("%s to wait at %s (%d)", id, phase, i+1), func(d hostileDetail) bool {
			if d.Delivery.RunStatus == "failed" {
				h.t.Fatalf("%s failed: %+v\n%s", id, d, h.serve.output())
			}
			return d.Delivery.Phase == phase && d.Delivery.Waiting
		})
		if i == n-1 {
			return
		}
		if code := apiCall(h.t, "POST", h.url+"/api/deliveries/"+id+"/approve", h.token, "", nil); code != http.StatusOK {
			h.t.Fatalf("approve %s = %d", id, code)
		}
	}
}

// The approval page marks what a reader of the diff cannot see (bidi
// controls, zero-width characters) and lists the files that have them;
// the sign-in page names where the token is kept in words, not by the
// data directory's path. Item 8 of issue 32.
func TestApprovalPageMarksHiddenCharacters(t *testing.T) {
	t.Parallel()
	h := newHandsServe(t, nil)
	id := h.create("Trap-bidi end", "review")
	h.wait(id, "the trap to wait before review", func(d hostileDetail) bool {
		if d.Delivery.RunStatus == "failed" {
			t.Fatalf("the delivery failed: %+v\n%s", d, h.serve.output())
		}
		return d.Delivery.Phase == "review" && d.Delivery.Waiting
	})
	page := httpGet(t, h.url+"/deliveries/"+id)
	for _, want := range []string{`id="hidden-chars"`, "<code>access.go</code>: 5", `title="RIGHT-TO-LEFT OVERRIDE">U&#43;202E</mark>`, `title="ZERO WIDTH SPACE">U&#43;200B</mark>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the approval page lacks %q", want)
		}
	}
	if strings.ContainsAny(page, "\u202e\u2066\u2069\u200b") {
		t.Error("the approval page carries the hidden characters themselves")
	}
	login := httpGet(t, h.url+"/login")
	if strings.Contains(login, h.data) || !strings.Contains(login, "&lt;data dir&gt;/api-token") {
		t.Errorf("the sign-in page shows the data directory or not <data dir>/api-token:\n%s", login)
	}
}

// httpGet returns the body of a GET that must answer 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d\n%s", url, resp.StatusCode, b)
	}
	return string(b)
}

// A repository's .agent/delivery.json that is a link (a clone can carry
// one) to a named pipe or to a file of baton's is not followed: the
// request that creates a delivery answers at once, names the file and
// says what to do, and nothing of the file it points at is read.
func TestSourceConfigLinkIsRefused(t *testing.T) {
	t.Parallel()
	h := newHandsServe(t, nil)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(h.repo, ".agent", "delivery.json")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	for _, target := range []string{fifo, filepath.Join(h.data, "api-token")} {
		os.Remove(config)
		if err := os.Symlink(target, config); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", h.url+"/api/deliveries", strings.NewReader(fmt.Sprintf(`{"repo":%q,"summary":"linked settings"}`, h.repo)))
		req.Header.Set("Authorization", "Bearer "+h.token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("create with .agent/delivery.json linked to %s: %v (the request hung)", target, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), ".agent/delivery.json must be a regular file") {
			t.Errorf("create with .agent/delivery.json linked to %s = %d %s; want 400 naming the file", target, resp.StatusCode, b)
		}
	}
}
