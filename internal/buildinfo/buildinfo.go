// Package buildinfo names the build a binary came from, for `baton
// version` and `baton-hook --version` alike: the version and commit a
// release links in (-ldflags "-X main.version=... -X main.commit=..."),
// else what the Go toolchain recorded.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is linked when a release set it, else the module version or
// the commit Go recorded (see From).
func Version(linked string) string {
	if linked != "" {
		return linked
	}
	bi, _ := debug.ReadBuildInfo()
	return From(bi)
}

// Commit is linked when a release set it, else the commit Go recorded,
// "" when none.
func Commit(linked string) string {
	if linked != "" {
		return linked
	}
	bi, _ := debug.ReadBuildInfo()
	return CommitFrom(bi)
}

// CommitFrom is the commit go build recorded, "" when none.
func CommitFrom(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}

// From names a build: its module version (a release, or the
// pseudo-version go build derives from the commit), else the commit and
// its date when Go recorded them, else "devel" and why there is nothing
// more to say.
func From(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	dirty := ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel (no commit recorded: built by go run or with -buildvcs=false)"
	}
	return fmt.Sprintf("devel %s%s, committed %s", rev[:min(12, len(rev))], dirty, at)
}

// Line is the one line a binary answers --version with: "name version
// (commit c, go1.x, os/arch)", the commit left out when the version
// already holds it.
func Line(name, version, commit string) string {
	built := ""
	if c := Short(commit); c != "" && !strings.Contains(version, c) {
		built = "commit " + c + ", "
	}
	return fmt.Sprintf("%s %s (%s%s, %s/%s)", name, version, built, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Short is the first 12 characters of a commit id.
func Short(commit string) string { return commit[:min(12, len(commit))] }
