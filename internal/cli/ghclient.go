package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
)

// githubFlags are the flags of every command that talks to GitHub.
type githubFlags struct {
	repo   string
	apiURL string
}

func (g *githubFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&g.repo, "repo", "R", "", "the GitHub repository as `owner/name` or host/owner/name (default: the origin remote of the working directory)")
	fl.StringVar(&g.apiURL, "api-url", "", "the GitHub API base `URL`, https on the repository's host (default: GITHUB_API_URL for github.com, else https://api.github.com/ or https://HOST/api/v3/)")
}

// target is a resolved GitHub repository and a client for its API.
type target struct {
	client *github.Client
	repo   github.Repo
	// named is set when the repository came from the command line rather
	// than the checkout, so suggested commands must name it too.
	named bool
}

// gitHub resolves the repository (from the argument's URL, else --repo,
// else the origin remote) and opens a client for it through f.GitHub. It
// runs only for commands that talk to GitHub, so nothing else ever runs
// `gh auth token` or `git remote`. A bad --repo is a usage error (exit 2); failing to
// find the repository or a token exits 1, like any other failure to get
// the context.
func (f *Factory) gitHub(ctx context.Context, g githubFlags, fromArg *github.Repo) (*target, error) {
	r, named, err := github.ResolveRepo(ctx, f.WorkDir, g.repo, fromArg)
	if err != nil {
		if baton.ErrorCode(err) == baton.Invalid && g.repo == "" && fromArg == nil {
			err = baton.WrapError(baton.Invalid, err, "cannot tell which GitHub repository this is (pass --repo owner/name)")
		}
		if g.repo != "" || fromArg != nil {
			return nil, err // what the user typed: exit 2
		}
		return nil, fetchFailed(err)
	}
	t := &target{repo: r, named: named}
	if f.GitHub == nil {
		return nil, baton.Errorf(baton.Internal, "this baton was built without GitHub access")
	}
	c, err := f.GitHub(ctx, t.repo, g.apiURL)
	if errors.Is(err, github.ErrNoToken) {
		return nil, fetchFailed(err)
	}
	if err != nil {
		return nil, err // a bad --api-url or GITHUB_API_URL: exit 2
	}
	t.client = c
	return t, nil
}
