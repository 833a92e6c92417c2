package github

import (
	"context"
	"errors"
	"strings"

	gh "github.com/google/go-github/v92/github"
)

// Viewer returns the account the token acts as (GET /user), so a
// confirmation prompt can say who will post. A GitHub App's installation
// token (GitHub Actions' GITHUB_TOKEN is one) acts as no user: GitHub
// refuses it GET /user, and Viewer returns a User with App set and the
// bot's login when the client knows it (one it minted the token for), so
// posting carries on and GitHub decides what the App may do. It returns
// Invalid when the token is missing or rejected. One request, none for a
// client of an App.
func (c *Client) Viewer(ctx context.Context) (*User, error) {
	if c.app != nil {
		return &User{Login: c.app.bot(), App: true}, nil
	}
	var u gh.User
	if _, err := c.get(ctx, "user", &u, op{action: "get", what: "the authenticated user"}); err != nil {
		if errors.Is(err, errIntegration) {
			return &User{App: true}, nil
		}
		return nil, err
	}
	return &User{Login: u.GetLogin(), Name: u.GetName(), URL: u.GetHTMLURL()}, nil
}

// viewerScopes is Viewer with the token's OAuth scopes (X-OAuth-Scopes,
// sent for classic tokens only). One request.
func (c *Client) viewerScopes(ctx context.Context) (*User, []string, error) {
	var u gh.User
	resp, err := c.get(ctx, "user", &u, op{action: "get", what: "the authenticated user"})
	if errors.Is(err, errIntegration) {
		return &User{App: true}, []string{}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	scopes := []string{}
	for _, s := range strings.Split(resp.Header.Get("X-OAuth-Scopes"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	return &User{Login: u.GetLogin(), Name: u.GetName(), URL: u.GetHTMLURL()}, scopes, nil
}
