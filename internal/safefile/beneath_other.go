//go:build !linux

package safefile

import "golang.org/x/sys/unix"

// openat2 is Linux's: elsewhere the components are walked.
func openat2(int, string, int, uint32) (int, bool, error) { return -1, false, nil }

// swapInto renames tmp over name, both in dirfd.
func swapInto(dirfd int, tmp, name string) error { return unix.Renameat(dirfd, tmp, dirfd, name) }
