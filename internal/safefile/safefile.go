// Package safefile holds the file primitives every part of baton writes
// through: atomic replacement, advisory locks, and JSONL logs that many
// processes append to at once and readers stream without trusting.
package safefile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// WriteAtomic replaces path with data so that a reader, or a crash,
// sees the old file or the new one, never a torn mix: it writes a temp
// file in the same directory, fsyncs it and renames it over path.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := renameio.WriteFile(path, data, perm, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// lockPoll is how often a waiting locker retries. Locks are held for
// microseconds (one read-modify-write), so a short poll wastes little.
const lockPoll = 2 * time.Millisecond

// Lock takes an exclusive advisory lock on path+".lock" and returns the
// function that releases it. The kernel drops the lock if the process
// dies, so a crashed writer never wedges the store. It gives up when ctx
// ends.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	fl := flock.New(path + ".lock")
	ok, err := fl.TryLockContext(ctx, lockPoll)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("lock %s: not acquired", path)
	}
	return func() { _ = fl.Unlock() }, nil
}

// TryLock is Lock without waiting: ok is false when another holder has
// the lock.
func TryLock(path string) (unlock func(), ok bool, err error) {
	fl := flock.New(path + ".lock")
	ok, err = fl.TryLock()
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, false, nil
	}
	return func() { _ = fl.Unlock() }, true, nil
}
