package github

import (
	"context"

	gh "github.com/google/go-github/v92/github"
)

// Viewer returns the account the token acts as (GET /user), so a
// confirmation prompt can say who will post. It returns Invalid when the
// token is missing or rejected. One request.
func (c *Client) Viewer(ctx context.Context) (*User, error) {
	var u gh.User
	if _, err := c.get(ctx, "user", &u, op{action: "get", what: "the authenticated user"}); err != nil {
		return nil, err
	}
	return &User{Login: u.GetLogin(), Name: u.GetName(), URL: u.GetHTMLURL()}, nil
}
