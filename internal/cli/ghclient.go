package cli

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

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
	fl.StringVar(&g.apiURL, "api-url", "", "the GitHub API base `URL`, for GitHub Enterprise (default: GITHUB_API_URL, else https://api.github.com/ or https://HOST/api/v3/)")
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
	t := &target{}
	switch {
	case fromArg != nil:
		if g.repo != "" {
			r, err := github.ParseRepo(g.repo)
			if err != nil {
				return nil, err
			}
			if !strings.EqualFold(r.String(), fromArg.String()) {
				return nil, usageError("the URL names %s but --repo names %s", fromArg, r)
			}
		}
		t.repo, t.named = *fromArg, true
	case g.repo != "":
		r, err := github.ParseRepo(g.repo)
		if err != nil {
			return nil, err
		}
		t.repo, t.named = r, true
	default:
		r, err := github.RepoFromRemote(ctx, f.WorkDir)
		if baton.ErrorCode(err) == baton.Invalid {
			err = baton.WrapError(baton.Invalid, err, "cannot tell which GitHub repository this is (pass --repo owner/name)")
		}
		if err != nil {
			return nil, fetchFailed(err)
		}
		t.repo = r
	}
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

// parseNumber reads an issue or pull request named as "12", "#12", or a
// web URL (https://github.com/owner/name/pull/12), which also names the
// repository. kinds are the URL path words accepted ("pull", "issues").
func parseNumber(arg string, kinds ...string) (int, *github.Repo, bool) {
	s := strings.TrimSpace(arg)
	if n, err := strconv.Atoi(strings.TrimPrefix(s, "#")); err == nil {
		return n, nil, n > 0
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return 0, nil, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 4 {
		return 0, nil, false
	}
	kindOK := false
	for _, k := range kinds {
		kindOK = kindOK || parts[2] == k
	}
	n, err := strconv.Atoi(parts[3])
	if !kindOK || err != nil || n <= 0 {
		return 0, nil, false
	}
	r, err := github.ParseRepo(u.Host + "/" + parts[0] + "/" + parts[1])
	if err != nil {
		return 0, nil, false
	}
	return n, &r, true
}
