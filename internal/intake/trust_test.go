package intake_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/intake"
)

// A source's API URL is where its host's token goes: only a service that
// vets it (the CLI's) may set one, and a source on a host baton has no
// token for is refused.
func TestSourceAPIURLAndHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	evil := "http://127.0.0.1:1/"
	_, err := e.in.Add(t.Context(), intake.SourceInput{Repo: "octo/app", APIURL: &evil})
	if !errors.Is(err, intake.ErrAPIURLNotSettable) || !strings.Contains(err.Error(), "baton source add --api-url") {
		t.Errorf("Add with an API URL and no vetting: %v, want ErrAPIURLNotSettable", err)
	}
	src := e.addSource()
	if _, err := e.in.Update(t.Context(), src.ID, intake.SourceInput{APIURL: &evil}); !errors.Is(err, intake.ErrAPIURLNotSettable) {
		t.Errorf("Update with an API URL: %v, want ErrAPIURLNotSettable", err)
	}
	if _, err := e.in.Add(t.Context(), intake.SourceInput{Repo: "ghe.evil.example/o/r"}); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "BATON_GITHUB_HOSTS") {
		t.Errorf("a source on an unconfigured host: %v, want Invalid naming BATON_GITHUB_HOSTS", err)
	}
	vetted := &intake.Service{Deliveries: e.svc, CheckAPIURL: github.Access{Getenv: func(string) string { return "" }}.CheckAPIURL}
	if _, err := vetted.Update(t.Context(), src.ID, intake.SourceInput{APIURL: &evil}); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("a vetted plain-http API URL: %v, want Invalid", err)
	}
	if got, _ := e.in.Get(t.Context(), src.ID); got.APIURL != "" {
		t.Errorf("the source's API URL is %q after refusals", got.APIURL)
	}
}
