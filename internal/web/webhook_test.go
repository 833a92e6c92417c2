package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Through the webhook route with real signatures: an issue outside the
// source's repository is refused (400) and makes nothing; a redelivery
// is answered 200 "already handled" and acted on once.
func TestWebhookRouteRefusesForeignIssuesAndReplays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	var logs lockedBuffer
	e.web.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if r := e.do("POST", "/api/sources", `{"repo":"Codertocat/Hello-World"}`, true, nil); r.StatusCode != 201 {
		t.Fatalf("add source = %d", r.StatusCode)
	}
	send := func(id, body string) (int, intake.WebhookResult) {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/webhooks/github", strings.NewReader(body))
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", intake.Sign("whsec", []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res intake.WebhookResult
		_ = json.NewDecoder(resp.Body).Decode(&res)
		return resp.StatusCode, res
	}
	event := func(issueURL string) string {
		return `{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"Codertocat/Hello-World","html_url":"https://github.com/Codertocat/Hello-World"},` +
			`"issue":{"number":1,"title":"Spelling error in the README file","state":"open","html_url":"` + issueURL + `","labels":[{"name":"baton"}]}}`
	}
	for i, u := range []string{"https://github.com/victim/private-repo/issues/1", "https://ghe.victim.example/Codertocat/Hello-World/issues/1"} {
		if status, res := send(fmt.Sprintf("foreign-%d", i), event(u)); status != 400 {
			t.Errorf("issue %s = %d %+v, want 400", u, status, res)
		}
	}
	if list, _ := e.svc.List(t.Context(), baton.DeliveryFilter{}); len(list) != 0 {
		t.Fatalf("foreign issues made %d deliveries", len(list))
	}
	if got := logs.String(); strings.Count(got, "webhook refused") != 2 || !strings.Contains(got, "victim/private-repo") || !strings.Contains(got, "foreign-0") {
		t.Errorf("the server log does not say why each webhook was refused:\n%s", got)
	}
	own := event("https://github.com/Codertocat/Hello-World/issues/1")
	if status, res := send("72d3162e-cc78-11e3-81ab-4c9367dc0958", own); status != 202 || res.Outcome != "queued" {
		t.Fatalf("first delivery = %d %+v, want 202 queued: answered once recorded, handled by its job", status, res)
	}
	if list, _ := e.svc.List(t.Context(), baton.DeliveryFilter{}); len(list) != 0 {
		t.Fatalf("the webhook was handled in GitHub's request: %d deliveries", len(list))
	}
	if res, err := e.web.Intake.HandleWebhook(t.Context(), queue.WebhookArgs{ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, queue.Job{Attempt: 1, MaxAttempts: 10}); err != nil || res.Outcome != "created" {
		t.Fatalf("its job = %+v, %v; want created", res, err)
	}
	for _, id := range []string{"72d3162e-cc78-11e3-81ab-4c9367dc0958", "a-new-id-on-the-same-body"} {
		if status, res := send(id, own); status != 200 || res.Outcome != "duplicate" || !strings.Contains(res.Reason, "already handled") {
			t.Errorf("replay as %s = %d %+v, want 200 already handled", id, status, res)
		}
	}
	if list, _ := e.svc.List(t.Context(), baton.DeliveryFilter{}); len(list) != 1 {
		t.Errorf("%d deliveries, want 1", len(list))
	}
}

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// GitHub's default webhook content type is a form: the event JSON is its
// payload field, and the signature is over the form body as sent. Such a
// webhook from a source with its own secret is acted on, not refused as
// badly signed; a signed form without a payload is a 400.
func TestWebhookRouteTakesFormBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	if r := e.do("POST", "/api/sources", `{"repo":"Codertocat/Hello-World","webhook_secret":"source-secret"}`, true, nil); r.StatusCode != 201 {
		t.Fatalf("add source = %d", r.StatusCode)
	}
	send := func(id, secret, body string) (int, string) {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/webhooks/github", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", intake.Sign(secret, []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	event := `{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"Codertocat/Hello-World","html_url":"https://github.com/Codertocat/Hello-World"},` +
		`"issue":{"number":1,"title":"Spelling error in the README file","state":"open","html_url":"https://github.com/Codertocat/Hello-World/issues/1","labels":[{"name":"baton"}]}}`
	form := url.Values{"payload": {event}}.Encode()
	if status, body := send("form-1", "source-secret", form); status != 202 || !strings.Contains(body, `"outcome":"queued"`) {
		t.Fatalf("form webhook = %d %s, want 202 queued", status, body)
	}
	if res, err := e.web.Intake.HandleWebhook(t.Context(), queue.WebhookArgs{ID: "form-1"}, queue.Job{Attempt: 1, MaxAttempts: 10}); err != nil || res.Outcome != "created" {
		t.Fatalf("its job = %+v, %v; want created", res, err)
	}
	if list, _ := e.svc.List(t.Context(), baton.DeliveryFilter{}); len(list) != 1 {
		t.Fatalf("%d deliveries, want 1", len(list))
	}
	// Without a payload there is no repository to find the source's
	// secret by: the server's secret signs it.
	if status, body := send("form-2", "whsec", "zen=hi"); status != 400 || !strings.Contains(body, "payload") {
		t.Errorf("form without a payload = %d %s, want 400 naming the payload field", status, body)
	}
}

// A request never chooses where baton's news goes: notification targets
// in a source body are refused, and the source says only whether it has
// them.
func TestAPICannotSetNotificationTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	var src struct {
		ID            string
		NotifyWebhook *bool `json:"notify_webhook_set"`
	}
	if r := e.do("POST", "/api/sources", `{"repo":"octo/app"}`, true, &src); r.StatusCode != 201 || src.NotifyWebhook == nil || *src.NotifyWebhook {
		t.Fatalf("add = %d %+v", r.StatusCode, src)
	}
	for _, body := range []string{`{"notify":{"webhook_url":"https://evil.example/"}}`, `{"notify_webhook_url":"https://evil.example/"}`, `{"webhook_url":"https://evil.example/"}`} {
		var ae apiError
		if r := e.do("PATCH", "/api/sources/"+src.ID, body, true, &ae); r.StatusCode != 400 {
			t.Errorf("PATCH %s = %d %+v, want 400", body, r.StatusCode, ae)
		}
	}
}
