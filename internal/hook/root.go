package hook

import (
	"path/filepath"

	"github.com/baton-agent/baton/internal/fsstore"
)

// ResolveRoot picks the project root for a hook from the payload's cwd
// (which follows cd and worktrees), the harness's project directory
// (where the session started) and, last, the process directory:
//
//  1. the nearest store marker or git root above cwd (fsstore.Discover),
//     then above the project dir;
//  2. else the project dir, else cwd, else the process directory, with
//     how = FoundWorkDir: a hook never creates a store there.
//
// So a Stop fired after a `cd` into a subdirectory, a worktree or /tmp
// still finds the loop, and a hook never makes a store in a directory it
// merely passed through, nor outside a repository.
func ResolveRoot(cwd, projectDir, workDir string) (string, fsstore.Found) {
	var starts []string
	for _, d := range []string{cwd, projectDir} {
		if d != "" && filepath.IsAbs(d) {
			starts = append(starts, filepath.Clean(d))
		}
	}
	gitRoot := ""
	for _, d := range starts {
		root, how := fsstore.Discover(d)
		switch how {
		case fsstore.FoundMarker:
			return root, how
		case fsstore.FoundGitRoot:
			if gitRoot == "" {
				gitRoot = root
			}
		}
	}
	if gitRoot != "" {
		return gitRoot, fsstore.FoundGitRoot
	}
	if projectDir != "" && filepath.IsAbs(projectDir) {
		return filepath.Clean(projectDir), fsstore.FoundWorkDir
	}
	if len(starts) > 0 {
		return starts[0], fsstore.FoundWorkDir
	}
	return fsstore.Discover(workDir)
}
