package main

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/notify"
)

// Through the real binaries: serve, started with --notify-webhook and a
// secret file, announces a delivery closed by another process (the CLI)
// to a loopback receiver, signed, linking to the delivery's page, and
// without a token in it.
func TestServeNotifiesAWebhook(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	t.Cleanup(recv.Close)
	secretFile := filepath.Join(t.TempDir(), "hook.secret")
	if err := os.WriteFile(secretFile, []byte("hook-secret-0000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const ghToken, apiToken = "ghp_neverInANotice000000000000", "baton_api_token_never_in_a_notice"
	env := ghEnv(home, "BATON_DATA_DIR="+data, "GH_TOKEN="+ghToken, "BATON_API_TOKEN="+apiToken, "BATON_AGENT=command:true")
	repo := userRepo(t, env)
	startServe(t, env, repo, "--addr", "127.0.0.1:0", "--workers", "0", "--public-url", "https://baton.example.com",
		"--notify-webhook", recv.URL+"/hook", "--notify-webhook-secret-file", secretFile)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(batonBin, args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("delivery", "create", "--repo", ".", "--summary", "Add a health endpoint")
	run("delivery", "close", "1", "--reason", "not needed")
	select {
	case r := <-got:
		b := <-bodies
		if r.Header.Get(notify.EventHeader) != "delivery.closed" || !hmac.Equal([]byte(r.Header.Get(notify.SignatureHeader)), []byte(notify.Sign("hook-secret-0000", b))) {
			t.Errorf("webhook headers %v do not sign the body %s", r.Header, b)
		}
		var n struct {
			Event    string
			Reason   string
			Delivery struct{ URL, Title string }
		}
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatal(err)
		}
		if n.Event != "delivery.closed" || n.Delivery.Title != "Add a health endpoint" || !strings.HasPrefix(n.Delivery.URL, "https://baton.example.com/deliveries/") ||
			!strings.Contains(n.Reason, "not needed") {
			t.Errorf("notice = %+v", n)
		}
		if s := string(b) + r.Header.Get("Authorization"); strings.Contains(s, ghToken) || strings.Contains(s, apiToken) || strings.Contains(s, "hook-secret") {
			t.Error("the notice carries a token or the secret")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve sent no notice within 30 s")
	}
}
