package fsstore

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The remembered subject is returned for its commit only, and a file
// anyone could have written (a link, a FIFO, several lines, control
// characters, a huge one) gives none.
func TestCommitSubject(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	sha := strings.Repeat("ab", 20)
	if _, ok := s.CommitSubject(sha); ok {
		t.Fatal("a subject before any was remembered")
	}
	s.RememberCommitSubject(sha, "fix: the ledger's rounding")
	if got, ok := s.CommitSubject(sha); !ok || got != "fix: the ledger's rounding" {
		t.Fatalf("CommitSubject = %q, %v", got, ok)
	}
	if _, ok := s.CommitSubject(strings.Repeat("cd", 20)); ok {
		t.Error("another commit's subject was returned")
	}
	if _, ok := s.CommitSubject("abab"); ok {
		t.Error("a subject for a short name was returned")
	}
	s.RememberCommitSubject(sha, "two\nlines")
	if got, _ := s.CommitSubject(sha); got != "fix: the ledger's rounding" {
		t.Errorf("a subject of two lines replaced the one kept: %q", got)
	}

	path := s.indexPath(SubjectCacheFile)
	outside := filepath.Join(t.TempDir(), "subject")
	if err := os.WriteFile(outside, []byte(sha+" from outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, make := range map[string]func() error{
		"link out of the store": func() error { return os.Symlink(outside, path) },
		"two lines":             func() error { return os.WriteFile(path, []byte(sha+" one\n"+sha+" two\n"), 0o644) },
		"a control character":   func() error { return os.WriteFile(path, []byte(sha+" bell\a\n"), 0o644) },
		"no newline":            func() error { return os.WriteFile(path, []byte(sha+" cut"), 0o644) },
		"too large": func() error {
			return os.WriteFile(path, []byte(sha+" "+strings.Repeat("x", maxSubjectLine)+"\n"), 0o644)
		},
		"a FIFO": func() error { return syscall.Mkfifo(path, 0o644) },
	} {
		os.Remove(path)
		if err := make(); err != nil {
			t.Fatal(err)
		}
		if got, ok := s.CommitSubject(sha); ok {
			t.Errorf("%s: CommitSubject = %q", name, got)
		}
	}
}
