package github

import (
	"context"
	"errors"

	"github.com/baton-agent/baton"
)

// Opener opens the API client for a repository's host; apiURL overrides
// the base URL ("" for the host's default). The composition root supplies
// it, with the token and host rules; with no token its error wraps
// ErrNoToken.
type Opener func(ctx context.Context, repo Repo, apiURL string) (*Client, error)

// ErrNoRepo is the cause of Open's error when nothing named a repository
// and the project's checkout does not say which one it is.
var ErrNoRepo = errors.New("no GitHub repository named or found")

// OpenRequest says which repository a caller means.
type OpenRequest struct {
	// Dir is the project whose origin remote names the repository when
	// nothing else does.
	Dir string
	// Repo is the repository as the caller named it ("owner/name" or
	// "host/owner/name"); "" for none.
	Repo string
	// FromURL is the repository an argument's URL named; nil for none.
	FromURL *Repo
	// APIURL overrides the API base URL; "" for the host's default.
	APIURL string
}

// Target is a repository with a client for its API.
type Target struct {
	Client *Client
	Repo   Repo
	// Named is set when the caller named the repository rather than the
	// checkout, so commands suggested to an agent must name it too.
	Named bool
}

// Open resolves the repository a request means (its URL, else its Repo,
// else the origin remote of Dir) and opens a client for it: the one step
// every edge takes before talking to GitHub. A repository the caller
// named badly is Invalid; when nothing named one and the checkout does
// not say, the error wraps ErrNoRepo; without a token it wraps ErrNoToken.
func Open(ctx context.Context, open Opener, req OpenRequest) (*Target, error) {
	r, named, err := resolveRepo(ctx, req.Dir, req.Repo, req.FromURL)
	if err != nil {
		if req.Repo == "" && req.FromURL == nil {
			return nil, &baton.Error{Code: baton.ErrorCode(err), Message: "cannot tell which GitHub repository this is (name it as owner/name: --repo, or repo over MCP)",
				Err: noRepoError{err}}
		}
		return nil, err
	}
	if open == nil {
		return nil, baton.Errorf(baton.Internal, "this baton was built without GitHub access")
	}
	c, err := open(ctx, r, req.APIURL)
	if err != nil {
		return nil, err
	}
	return &Target{Client: c, Repo: r, Named: named}, nil
}

// noRepoError is why the checkout did not say which repository it is; it
// is ErrNoRepo to errors.Is, and reads as its cause.
type noRepoError struct{ err error }

func (e noRepoError) Error() string        { return e.err.Error() }
func (e noRepoError) Unwrap() error        { return e.err }
func (e noRepoError) Is(target error) bool { return target == ErrNoRepo }
