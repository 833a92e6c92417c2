package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	octo := Repo{"github.com", "octo", "app"}
	checkout := gitRepo(t, "git@github.com:octo/app.git")
	var opened []Repo
	open := func(_ context.Context, r Repo, apiURL string) (*Client, error) {
		opened = append(opened, r)
		if apiURL == "bad" {
			return nil, baton.Errorf(baton.Invalid, "bad API URL")
		}
		return New(Options{BaseURL: "https://api.github.com/", Token: "t"})
	}
	noToken := func(context.Context, Repo, string) (*Client, error) {
		return nil, baton.WrapError(baton.Invalid, ErrNoToken, "no GitHub token for github.com")
	}
	other := Repo{"github.com", "other", "lib"}
	for _, tt := range []struct {
		name      string
		open      Opener
		req       OpenRequest
		want      Repo
		named     bool
		code      baton.Code
		noRepo    bool
		noToken   bool
		wantOpens bool
	}{
		{name: "the checkout's origin", open: open, req: OpenRequest{Dir: checkout}, want: octo, wantOpens: true},
		{name: "a named repository", open: open, req: OpenRequest{Dir: checkout, Repo: "other/lib"}, want: other, named: true, wantOpens: true},
		{name: "a URL's repository", open: open, req: OpenRequest{Dir: t.TempDir(), FromURL: &other}, want: other, named: true, wantOpens: true},
		{name: "a URL and a repository that disagree", open: open, req: OpenRequest{FromURL: &other, Repo: "octo/app"}, code: baton.Invalid},
		{name: "a bad repository", open: open, req: OpenRequest{Dir: checkout, Repo: "nonsense"}, code: baton.Invalid},
		{name: "no checkout, nothing named", open: open, req: OpenRequest{Dir: t.TempDir()}, code: baton.NotFound, noRepo: true},
		{name: "a checkout whose origin is not GitHub", open: open, req: OpenRequest{Dir: gitRepo(t, "https://gitlab.example/a/b/c/d")}, code: baton.Invalid, noRepo: true},
		{name: "no GitHub access", req: OpenRequest{Dir: checkout}, code: baton.Internal},
		{name: "no token", open: noToken, req: OpenRequest{Dir: checkout}, code: baton.Invalid, noToken: true},
		{name: "a bad API URL", open: open, req: OpenRequest{Dir: checkout, APIURL: "bad"}, code: baton.Invalid, wantOpens: true},
	} {
		opened = nil
		got, err := Open(t.Context(), tt.open, tt.req)
		switch {
		case baton.ErrorCode(err) != tt.code:
			t.Errorf("%s: Open(%+v) error %v, want code %q", tt.name, tt.req, err, tt.code)
		case errors.Is(err, ErrNoRepo) != tt.noRepo || errors.Is(err, ErrNoToken) != tt.noToken:
			t.Errorf("%s: Open(%+v) error %v: ErrNoRepo %v, ErrNoToken %v, want %v, %v", tt.name, tt.req, err,
				errors.Is(err, ErrNoRepo), errors.Is(err, ErrNoToken), tt.noRepo, tt.noToken)
		case err == nil && (got.Repo != tt.want || got.Named != tt.named || got.Client == nil):
			t.Errorf("%s: Open(%+v) = %+v, want %v named %v", tt.name, tt.req, got, tt.want, tt.named)
		case (len(opened) > 0) != tt.wantOpens:
			t.Errorf("%s: Open(%+v) opened %v", tt.name, tt.req, opened)
		}
		if tt.noRepo && err != nil && !containsAll(err.Error(), "cannot tell which GitHub repository this is", "owner/name") {
			t.Errorf("%s: Open error %q does not say how to name the repository", tt.name, err)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
