package gitx

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Writing refs in-process, as git's files backend does, costs a few
// system calls where `git update-ref` costs a process. It is done only in
// a repository baton made and configured itself (Repo.OwnRefs: the
// repository cache, which keeps no reflog and has no hooks), and only
// where it is plainly the same as git: updates and creations of loose
// refs in a files-backend repository, to objects stored loose, and
// deletions of refs that are loose alone. Everything else (a deletion of
// a packed ref, which rewrites packed-refs; a ref another process has
// locked, which git waits for; a reflog; a hook; an object in a pack; a
// name git might refuse) goes to git.

// errAskGit means writeRefs did nothing: git must make the change.
var errAskGit = errors.New("ask git")

// writeRefs applies updates to l's loose ref files as one transaction:
// every ref's lock file is taken (git's own protocol: <ref>.lock, made
// exclusively), and packed-refs.lock too when a ref is deleted, as git
// takes it, so that no git pack-refs packs a ref while it goes; every old
// value is checked under the locks, and then each lock, holding the new
// value, renamed over its ref, and each deleted ref's file removed. A
// reader sees each ref's old value or its new one. errAskGit means
// nothing was changed and git should do it.
func (l Layout) writeRefs(updates []RefUpdate) error {
	if len(updates) == 0 || l.GitDir != l.CommonDir {
		return errAskGit
	}
	if regular(filepath.Join(l.CommonDir, "hooks", "reference-transaction")) {
		return errAskGit
	}
	deleting := false
	for _, u := range updates {
		if (u.New != "" && !IsObjectName(u.New)) || (u.Old != "" && !IsObjectName(u.Old)) || !plainRefName(u.Name) {
			return errAskGit
		}
		if u.New == "" {
			deleting = true
		} else if !regular(filepath.Join(l.CommonDir, "objects", u.New[:2], u.New[2:])) {
			return errAskGit // packed, or not there: git checks
		}
		if _, err := os.Lstat(filepath.Join(l.CommonDir, "logs", filepath.FromSlash(u.Name))); !errors.Is(err, fs.ErrNotExist) {
			return errAskGit // a reflog to append to
		}
	}
	var locks []*os.File
	defer func() {
		for _, f := range locks {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
	}()
	for _, u := range updates {
		path := filepath.Join(l.CommonDir, filepath.FromSlash(u.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return errAskGit // a ref where a directory must be: git says so
		}
		f, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return errAskGit // held by another git, which git waits for
		}
		locks = append(locks, f)
	}
	if deleting {
		f, err := os.OpenFile(filepath.Join(l.CommonDir, "packed-refs.lock"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return errAskGit
		}
		defer func() {
			f.Close()
			os.Remove(f.Name())
		}()
	}
	for _, u := range updates {
		cur, exists, err := l.ReadRef(u.Name)
		if err != nil {
			return errAskGit
		}
		if u.New == "" {
			if !exists || l.packed(u.Name) {
				return errAskGit // nothing to delete, or packed-refs to rewrite: git's
			}
		}
		if !exists && !l.canCreate(u.Name) {
			return errAskGit // a name that clashes with another ref's: git says so
		}
		switch mustNotExist := strings.Trim(u.Old, "0") == "" && u.Old != ""; {
		case mustNotExist && exists:
			return fmt.Errorf("cannot update ref '%s': reference already exists", u.Name)
		case !mustNotExist && u.Old != "" && cur != u.Old:
			if !exists {
				cur = "nothing"
			}
			return fmt.Errorf("cannot update ref '%s': is at %s but expected %s", u.Name, cur, u.Old)
		}
	}
	for i, f := range locks {
		if updates[i].New == "" {
			continue
		}
		if _, err := f.WriteString(updates[i].New + "\n"); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	for i, f := range locks {
		name := f.Name()
		ref := strings.TrimSuffix(name, ".lock")
		if updates[i].New == "" {
			// The lock goes after the ref, with the deferred clean-up.
			if err := os.Remove(ref); err != nil {
				return fmt.Errorf("delete ref '%s': %w", updates[i].Name, err)
			}
			continue
		}
		if err := os.Rename(name, ref); err != nil {
			return fmt.Errorf("update ref '%s': %w", updates[i].Name, err)
		}
		locks[i] = nil
	}
	return nil
}

// packed reports whether packed-refs holds name (or cannot be read).
func (l Layout) packed(name string) bool {
	f, err := os.Open(filepath.Join(l.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close()
	_, ok, err := lookupPackedRef(f, name)
	return ok || err != nil
}

// canCreate reports whether a ref name can be made: no ref is a
// directory of it, and it is a directory of no ref, loose or packed.
func (l Layout) canCreate(name string) bool {
	if _, err := os.Lstat(filepath.Join(l.CommonDir, filepath.FromSlash(name))); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	f, err := os.Open(filepath.Join(l.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024)
	for sc.Scan() {
		_, ref, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if strings.HasPrefix(ref, name+"/") || strings.HasPrefix(name, ref+"/") {
			return false
		}
	}
	return sc.Err() == nil
}

// plainRefName reports whether name is a ref name git accepts and that
// maps to one file plainly: refs/ and components of letters, digits and
// "-_.", none empty, none starting with "." or ending in ".lock", no "..".
func plainRefName(name string) bool {
	rest, ok := strings.CutPrefix(name, "refs/")
	if !ok || rest == "" || strings.Contains(name, "..") {
		return false
	}
	for _, c := range strings.Split(rest, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") || strings.HasSuffix(c, ".") {
			return false
		}
		for i := 0; i < len(c); i++ {
			b := c[i]
			if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.') {
				return false
			}
		}
	}
	return true
}

// regular reports whether path is a regular file (not through a link).
func regular(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}
