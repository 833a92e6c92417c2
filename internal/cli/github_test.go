package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

// A body that would break any shell quoting: it must reach GitHub byte for
// byte.
const trickyBody = "LGTM, but:\n\n- `$(rm -rf /)` and \"quotes\" and 'single' stay text\n- a line with a trailing backslash \\\n\nThanks!\n"

// terminalRun is baton running in-process with a pseudo-terminal as its
// stdin and stderr, as when a person runs it in a terminal.
type terminalRun struct {
	t      *testing.T
	ptmx   *os.File
	tty    *os.File
	stdout bytes.Buffer
	done   chan int

	mu     sync.Mutex
	screen bytes.Buffer
	grew   chan struct{}
}

func (e *env) runOnTerminal(args ...string) *terminalRun {
	e.t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		e.t.Skipf("no pseudo-terminal: %v", err)
	}
	r := &terminalRun{t: e.t, ptmx: ptmx, tty: tty, done: make(chan int, 1), grew: make(chan struct{}, 1)}
	e.t.Cleanup(func() { ptmx.Close(); tty.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				r.mu.Lock()
				r.screen.Write(buf[:n])
				r.mu.Unlock()
				select {
				case r.grew <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	f := &Factory{
		IO:      IO{In: tty, Out: &r.stdout, Err: tty, InTTY: true},
		Now:     func() time.Time { return e.now },
		Getenv:  func(k string) string { return e.vars[k] },
		WorkDir: e.dir,
		Version: "test",
	}
	wireForTest(f, "")
	go func() { r.done <- Main(context.Background(), args, f) }()
	return r
}

// waitFor waits until the terminal shows s. The timeout only bounds a
// broken test; nothing here sleeps to synchronize.
func (r *terminalRun) waitFor(s string) {
	r.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		ok := strings.Contains(r.screen.String(), s)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.grew:
		case code := <-r.done:
			r.done <- code
			r.t.Fatalf("baton exited %d before showing %q; screen:\n%s", code, s, r.text())
		case <-timeout:
			r.t.Fatalf("the terminal never showed %q; screen:\n%s", s, r.text())
		}
	}
}

func (r *terminalRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

func (r *terminalRun) press(keys string) {
	r.t.Helper()
	if _, err := r.ptmx.Write([]byte(keys)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *terminalRun) exit() int {
	r.t.Helper()
	select {
	case code := <-r.done:
		return code
	case <-time.After(20 * time.Second):
		r.t.Fatalf("baton did not exit; screen:\n%s", r.text())
		return -1
	}
}

// reviewEnv is octo/app#12 by alice and a review body in a file.
func reviewEnv(t *testing.T) (*env, *githubtest.Server, string) {
	e := newEnv(t)
	srv := newGitHub(e)
	addReviewFixture(srv)
	body := filepath.Join(e.dir, "review.md")
	if err := os.WriteFile(body, []byte(trickyBody), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, srv, body
}

func TestGitHubReviewEnterPosts(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	r := e.runOnTerminal("github", "review", "12", "--repo", "octo/app", "--event", "request-changes", "--body-file", body)
	before, err := term.GetState(int(r.tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor("Press Enter to post")
	if n := len(srv.Reviews("octo/app", 12)); n != 0 {
		t.Fatalf("%d reviews posted before Enter", n)
	}
	r.press("\r")
	if code := r.exit(); code != ExitOK {
		t.Fatalf("exit = %d; screen:\n%s", code, r.text())
	}
	r.waitFor("baton: posted")
	screen := r.text()
	for _, want := range []string{
		`Review pull request octo/app#12 "Reject expired JWTs" (open)`,
		"as       hubot",
		"verdict  request changes",
		"│ - `$(rm -rf /)` and \"quotes\" and 'single' stay text",
		"baton: posted a request changes review on octo/app#12 as hubot",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal does not show %q; screen:\n%s", want, screen)
		}
	}
	reviews := srv.Reviews("octo/app", 12)
	if len(reviews) != 1 || reviews[0].Event != "REQUEST_CHANGES" || reviews[0].Body != trickyBody || reviews[0].Author != "hubot" {
		t.Fatalf("posted reviews = %+v, want one REQUEST_CHANGES with the file's body", reviews)
	}
	if reviews[0].CommitID != srv.PullRequest("octo/app", 12).HeadSHA {
		t.Errorf("review pinned to %q, want the head shown", reviews[0].CommitID)
	}
	if got := strings.TrimSpace(r.stdout.String()); !strings.HasPrefix(got, "https://github.com/octo/app/pull/12#pullrequestreview-") {
		t.Errorf("stdout = %q, want the review's URL", got)
	}
	after, err := term.GetState(int(r.tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the terminal was left in another mode")
	}
}

func TestGitHubReviewOtherKeysCancel(t *testing.T) {
	t.Parallel()
	for name, key := range map[string]string{"esc": "\x1b", "y": "y", "ctrl-c": "\x03", "space": " "} {
		t.Run(name, func(t *testing.T) {
			e, srv, body := reviewEnv(t)
			r := e.runOnTerminal("github", "review", "12", "--repo", "octo/app", "--event", "comment", "--body-file", body)
			r.waitFor("Press Enter to post")
			r.press(key)
			if code := r.exit(); code != ExitError {
				t.Errorf("exit = %d, want %d", code, ExitError)
			}
			if n := len(srv.Reviews("octo/app", 12)); n != 0 {
				t.Errorf("%d reviews posted after %s", n, name)
			}
			if srv.Count("POST /repos/octo/app/pulls/12/reviews") != 0 {
				t.Errorf("a review request was sent after %s", name)
			}
			if r.stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", r.stdout.String())
			}
			r.waitFor("canceled: nothing was posted")
		})
	}
}

func TestGitHubCommentOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addIssueFixture(srv)
	e.write("note.md", "Reproduced on v1.15 \x1b[2J\x1b[H(that escape must not clear the screen)\n")
	r := e.runOnTerminal("github", "comment", "#7", "--repo", "octo/app", "--body-file", filepath.Join(e.dir, "note.md"))
	r.waitFor("Press Enter to post")
	r.press("\r")
	if code := r.exit(); code != ExitOK {
		t.Fatalf("exit = %d; screen:\n%s", code, r.text())
	}
	r.waitFor("baton: posted")
	screen := r.text()
	if !strings.Contains(screen, `Comment on issue octo/app#7 "Expired tokens are accepted" (open)`) || !strings.Contains(screen, `\x1b[2J\x1b[H`) {
		t.Errorf("the summary does not show the target and the escaped body; screen:\n%s", screen)
	}
	if strings.Contains(screen, "\x1b[2J") {
		t.Errorf("the body's escape sequence reached the terminal")
	}
	comments := srv.Comments("octo/app", 7)
	last := comments[len(comments)-1]
	if len(comments) != 16 || last.Author != "hubot" || !strings.HasPrefix(last.Body, "Reproduced on v1.15 \x1b[2J") {
		t.Errorf("comments after posting: %d, last %+v", len(comments), last)
	}
	if got := strings.TrimSpace(r.stdout.String()); !strings.HasPrefix(got, "https://github.com/octo/app/issues/7#issuecomment-") {
		t.Errorf("stdout = %q, want the comment's URL", got)
	}
}

// Without a terminal and without --yes nothing is asked, fetched or
// posted.
func TestGitHubPostRefusesWithoutTerminal(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	for _, args := range [][]string{
		{"github", "review", "12", "--repo", "octo/app", "--event", "approve"},
		{"github", "comment", "12", "--repo", "octo/app", "--body-file", body},
	} {
		r := e.run("", "", args...)
		if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "refusing to post without confirmation") || !strings.Contains(r.stderr, "--yes") {
			t.Errorf("baton %v = exit %d, stdout %q, stderr %q; want a refusal (exit 2)", args, r.code, r.stdout, r.stderr)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("a refused post made %d requests: %v", n, srv.RequestLog())
	}
}

func TestGitHubPostYes(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	r := e.ok("", "", "github", "review", "12", "--repo", "octo/app", "--event", "approve", "--body-file", body, "--yes", "--json")
	var doc struct {
		SchemaVersion int    `json:"schema_version"`
		URL           string `json:"url"`
		Account       string `json:"account"`
		Event         string `json:"event"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || doc.Account != "hubot" || doc.Event != "APPROVE" || !strings.Contains(doc.URL, "#pullrequestreview-") {
		t.Errorf("--json = %+v", doc)
	}
	if !strings.Contains(r.stderr, "verdict  approve") || strings.Contains(r.stderr, "Press Enter") {
		t.Errorf("--yes stderr = %q, want the summary without a question", r.stderr)
	}
	if rv := srv.Reviews("octo/app", 12); len(rv) != 1 || rv[0].Body != trickyBody {
		t.Errorf("reviews = %+v", rv)
	}
	want := []string{"GET /user", "GET /repos/octo/app/pulls/12", "POST /repos/octo/app/pulls/12/reviews"}
	if got := srv.RequestLog(); !reflect.DeepEqual(got, want) {
		t.Errorf("requests = %q, want %q", got, want)
	}

	// A body from stdin goes with --yes only.
	r = e.ok("", "line one\nline \"two\"\n", "github", "comment", "12", "--repo", "octo/app", "--body-file", "-", "--yes")
	if cs := srv.Comments("octo/app", 12); len(cs) != 1 || cs[0].Body != "line one\nline \"two\"\n" {
		t.Errorf("comments = %+v", cs)
	}
	if !strings.Contains(r.stderr, "Comment on pull request octo/app#12") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestGitHubPostUsageErrors(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	empty := filepath.Join(e.dir, "empty.md")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"github", "review", "12", "--body-file", body, "--yes"}, "--event must be approve, request-changes or comment"},
		{[]string{"github", "review", "12", "--event", "lgtm", "--body-file", body, "--yes"}, `got "lgtm"`},
		{[]string{"github", "review", "12", "--event", "comment", "--yes"}, "--body-file is required"},
		{[]string{"github", "review", "x", "--event", "approve", "--yes"}, "takes a pull request number"},
		{[]string{"github", "comment", "7", "--body-file", empty, "--yes"}, "nothing to post"},
		{[]string{"github", "comment", "7", "--body-file", "-"}, "stdin, which the confirmation needs"},
		{[]string{"github", "comment", "7", "--body-file", filepath.Join(e.dir, "missing.md"), "--yes"}, "cannot read --body"},
	}
	for _, tt := range tests {
		r := e.run("", "", append(tt.args, "--repo", "octo/app")...)
		if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("baton %v = exit %d, stderr %q; want exit 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("usage errors made %d requests", n)
	}
}

// GitHub refuses an author's approval; baton says so before asking.
func TestGitHubReviewOwnPullRequest(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	srv.SetViewer("alice")
	r := e.run("", "", "github", "review", "12", "--repo", "octo/app", "--event", "approve", "--body-file", body, "--yes")
	if r.code == ExitOK || !strings.Contains(r.stderr, "alice opened octo/app#12") || strings.Contains(r.stderr, "verdict") {
		t.Errorf("self-approval = exit %d, stderr %q", r.code, r.stderr)
	}
	if n := len(srv.Reviews("octo/app", 12)); n != 0 {
		t.Errorf("%d reviews posted", n)
	}
}

func TestGitHubPostFailure(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	srv.Fail("POST /repos/octo/app/pulls/12/reviews", githubtest.ServerError())
	r := e.run("", "", "github", "review", "12", "--repo", "octo/app", "--event", "comment", "--body-file", body, "--yes")
	if r.code != ExitError || r.stdout != "" || !strings.Contains(r.stderr, "GitHub is unavailable") {
		t.Errorf("failed post = exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A GitHub App's installation token, such as GitHub Actions'
// GITHUB_TOKEN, acts as no user: GitHub refuses it GET /user. Review and
// comment post anyway, "as GitHub App", and GitHub's bot is the author.
func TestGitHubPostAsAppToken(t *testing.T) {
	t.Parallel()
	e, srv, body := reviewEnv(t)
	const actions = "ghs_ActionsTokenThatMustNeverBeShown01"
	srv.AddInstallationToken(actions, "github-actions[bot]")
	e.vars["GITHUB_TOKEN"] = actions
	r := e.ok("", "", "github", "review", "12", "--repo", "octo/app", "--event", "request-changes", "--body-file", body, "--yes", "--json")
	var doc struct {
		Account string `json:"account"`
		App     bool   `json:"app"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.App || doc.Account != "" {
		t.Errorf("--json = %+v, want an App without an account", doc)
	}
	if !strings.Contains(r.stderr, "as       GitHub App") || !strings.Contains(r.stderr, "as GitHub App") {
		t.Errorf("stderr = %q, want the summary to say it posts as GitHub App", r.stderr)
	}
	if rv := srv.Reviews("octo/app", 12); len(rv) != 1 || rv[0].Author != "github-actions[bot]" || rv[0].Event != "REQUEST_CHANGES" {
		t.Errorf("reviews = %+v, want one by the Actions bot", rv)
	}
	r = e.ok("", "", "github", "comment", "12", "--repo", "octo/app", "--body-file", body, "--yes")
	if cs := srv.Comments("octo/app", 12); len(cs) != 1 || cs[0].Author != "github-actions[bot]" {
		t.Errorf("comments = %+v, want one by the Actions bot", cs)
	}
	if strings.Contains(r.stderr+r.stdout, actions) {
		t.Error("the token was printed")
	}
}
