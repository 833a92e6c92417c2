// Package safefiletest checks, from outside, what package safefile
// promises: that a durable write reached the disk before its writer went
// on, as strace saw the real binary do it.
package safefiletest

import (
	"regexp"
	"strings"
	"testing"
)

// StraceArgs are the strace flags and system calls Durable reads: every
// process, file descriptors shown with their paths.
var StraceArgs = []string{"-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,link,linkat,rename,renameat,renameat2,flock"}

// Durable fails t unless the strace output trace (taken with StraceArgs)
// shows file put in place (renamed, or linked for an exclusive create)
// after an fsync of its bytes, and its directory fsynced after that. It
// returns the trace's lines and the indexes of the put and of the
// directory's fsync.
func Durable(t testing.TB, trace []byte, file string) (lines []string, put, synced int) {
	t.Helper()
	// renameat(9</p/loops>, ".<id>.md.tmp-…", 9</p/loops>, "<id>.md") = 0,
	// then fsync(10</p/loops>) = 0.
	putRE := regexp.MustCompile(`(?:renameat2?|linkat)\((\d+)<([^>]+)>, "[^"]*", \d+<[^>]+>, "` + regexp.QuoteMeta(file) + `"`)
	lines = strings.Split(string(trace), "\n")
	for i, line := range lines {
		m := putRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !strings.Contains(strings.Join(lines[:i], "\n"), "fsync(") {
			t.Errorf("%s was not fsynced before it was put in place:\n%s", file, trace)
		}
		// With -f a call can be split: "fsync(9</p/loops> <unfinished ...>".
		syncRE := regexp.MustCompile(`fsync\(\d+<` + regexp.QuoteMeta(m[2]) + `>[ )]`)
		for j := i + 1; j < len(lines); j++ {
			if syncRE.MatchString(lines[j]) {
				return lines, i, j
			}
		}
		t.Fatalf("the directory of %s (%s) was not fsynced after it was put in place:\n%s", file, m[2], trace)
	}
	t.Fatalf("%s was not put in place in the trace:\n%s", file, trace)
	return nil, 0, 0
}
