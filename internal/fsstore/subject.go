package fsstore

import (
	"strings"

	"github.com/baton-agent/baton/internal/gitx"
)

// SubjectCacheFile, in the per-machine directory, holds the subject of
// the commit a handoff last found at HEAD: "<object name> <subject>\n".
// A handoff or a pre-compact at the same HEAD reads it there instead of
// starting `git log` (1.5 to 3 ms of a process, more on a loaded
// machine). An object name names one commit for good, so the line is
// never stale, only replaced.
const SubjectCacheFile = "head-subject"

// maxSubjectLine bounds the file; a longer subject is not kept.
const maxSubjectLine = 4 << 10

// CommitSubject returns the subject remembered for the commit sha. The
// file is read as anyone could have written it: one line, an object
// name, a subject with no control characters, or nothing.
func (s *Store) CommitSubject(sha string) (string, bool) {
	if !gitx.IsObjectName(sha) {
		return "", false
	}
	b, err := s.files.ReadFile(s.indexPath(SubjectCacheFile), maxSubjectLine)
	if err != nil {
		return "", false
	}
	line, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return "", false
	}
	name, subject, ok := strings.Cut(line, " ")
	if !ok || name != sha || !plainSubject(subject) {
		return "", false
	}
	return subject, true
}

// RememberCommitSubject keeps subject as the commit sha's, best effort:
// a file that cannot be written costs the next snapshot a `git log`.
func (s *Store) RememberCommitSubject(sha, subject string) {
	if !gitx.IsObjectName(sha) || !plainSubject(subject) || len(sha)+len(subject)+2 > maxSubjectLine || s.mkIndexes() != nil {
		return
	}
	_ = s.files.WriteCache(s.indexPath(SubjectCacheFile), []byte(sha+" "+subject+"\n"), 0o644)
}

// plainSubject reports whether subject is one line of text, as `git log
// --format=%s` prints one.
func plainSubject(subject string) bool {
	return !strings.ContainsFunc(subject, func(r rune) bool { return r < ' ' || r == 0x7f })
}
