package safefile

import (
	"fmt"
	"io/fs"
	"os"
)

// PrivateDir makes dir (and missing parents) with mode 0700, and takes
// group and other access away from a dir that exists with it. It returns
// the mode dir had when it changed it, else 0. What dir holds (a
// database, tokens, run logs) is then out of other users' reach however
// its own files were created.
func PrivateDir(dir string) (was fs.FileMode, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("%s is not a directory", dir)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return 0, nil
	}
	if err := os.Chmod(dir, perm&^0o077); err != nil {
		return 0, err
	}
	return perm, nil
}

// PrivateFiles takes group and other access away from each path that
// exists; missing paths are skipped.
func PrivateFiles(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return err
			}
		}
	}
	return nil
}
