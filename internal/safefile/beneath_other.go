//go:build !linux

package safefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// openat2 is Linux's: elsewhere the components are walked.
func openat2(int, string, int, uint32) (int, bool, error) { return -1, false, nil }

// swapInto renames tmp over name, both in dirfd.
func swapInto(dirfd int, tmp, name string) error { return unix.Renameat(dirfd, tmp, dirfd, name) }

// names lists the entries of d: elsewhere through os.File.
func (d *DirBeneath) names() ([]string, error) {
	var names []string
	err := d.list(func(f *os.File) (err error) {
		names, err = f.Readdirnames(-1)
		return err
	})
	return names, err
}
