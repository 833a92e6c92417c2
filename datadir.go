package baton

import "path/filepath"

// DataDir is where baton keeps its data (the delivery database, worktrees,
// run logs, the agent home and caches) unless told otherwise:
// BATON_DATA_DIR, else $XDG_DATA_HOME/baton, else ~/.local/share/baton.
// Relative paths are taken from workDir.
func DataDir(getenv func(string) string, workDir string) (string, error) {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(workDir, p)
	}
	if d := getenv("BATON_DATA_DIR"); d != "" {
		return abs(d), nil
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(abs(d), "baton"), nil
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(abs(home), ".local", "share", "baton"), nil
	}
	return "", Errorf(Invalid, "no home directory for baton's data: set BATON_DATA_DIR or pass --db")
}
