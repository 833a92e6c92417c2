package delivery

import (
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
)

// AllowedRepo is the rule for requests from the network (serve's API and
// dashboard, mcp --http): a delivery may be created only in a local
// repository the server was given (--repo), or a directory inside one.
// Links are resolved first, so a link inside an allowed repository
// cannot lead to another one. It returns the resolved path, or Invalid.
func AllowedRepo(allowed []string, repo string) (string, error) {
	real, err := filepath.EvalSymlinks(filepath.Clean(repo))
	if err != nil || !filepath.IsAbs(real) {
		real = ""
	}
	for _, r := range allowed {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			r = rr
		}
		if real != "" && (real == r || strings.HasPrefix(real, r+string(filepath.Separator))) {
			return real, nil
		}
	}
	if len(allowed) == 0 {
		return "", baton.Errorf(baton.Invalid, "this server accepts no local repositories: start it inside one, or with --repo PATH")
	}
	return "", baton.Errorf(baton.Invalid, "%q is not a repository this server was given (--repo): %s", baton.Truncate(repo, 200, "…"), strings.Join(allowed, ", "))
}
