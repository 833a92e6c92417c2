package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/brief"
	"github.com/baton-agent/baton/internal/github"
)

// githubFlags are the flags of every command that talks to GitHub.
type githubFlags struct {
	repo   string
	apiURL string
}

func (g *githubFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&g.repo, "repo", "R", "", "the GitHub repository as `owner/name` or host/owner/name (default: the origin remote of the project)")
	fl.StringVar(&g.apiURL, "api-url", "", "the GitHub API base `URL`, https on the repository's host (default: GITHUB_API_URL for github.com, else https://api.github.com/ or https://HOST/api/v3/)")
}

// openRequest is the repository the flags and an argument's URL name; when
// they name none, the origin remote of the project (the store's root, as
// the MCP server takes it) says which.
func (f *Factory) openRequest(g githubFlags, fromArg *github.Repo) github.OpenRequest {
	return github.OpenRequest{Dir: f.Store().Root(), Repo: g.repo, FromURL: fromArg, APIURL: g.apiURL}
}

// gitHub opens the repository the flags and fromArg name through
// f.GitHub. It runs only for commands that talk to GitHub, so nothing else
// ever runs `gh auth token` or `git remote`.
func (f *Factory) gitHub(ctx context.Context, g githubFlags, fromArg *github.Repo) (*github.Target, error) {
	t, err := github.Open(ctx, f.GitHub, f.openRequest(g, fromArg))
	return t, gitHubFailed(err)
}

// gitHubFailed makes failing to get the context exit 1, whatever its code:
// GitHub unreachable or refusing, no token, a checkout that does not say
// which repository it is. Exit 2 stays for what the user typed wrong (a
// bad --repo or --api-url), which is checked before any request.
func gitHubFailed(err error) error {
	if brief.IsFetchError(err) || errors.Is(err, github.ErrNoToken) || errors.Is(err, github.ErrNoRepo) {
		return fetchFailed(err)
	}
	return err
}
