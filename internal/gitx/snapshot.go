package gitx

import (
	"context"
	"strings"
)

// Snapshot is a work tree's state from one `git status`: what a handoff
// records and a pickup compares against.
type Snapshot struct {
	Branch  string   // "" on a detached HEAD
	Head    Commit   // zero in a repository with no commits
	Changes []Change // uncommitted and untracked paths
}

// Snapshot reads branch, HEAD and changes with two git processes run side
// by side (status with branch headers, and the HEAD commit with its
// subject). It returns an error outside a work tree.
func (r *Repo) Snapshot(ctx context.Context) (*Snapshot, error) {
	type logOut struct {
		out string
		err error
	}
	logc := make(chan logOut, 1)
	go func() {
		out, err := r.Run(ctx, "log", "-1", "--format=%H%x00%s", "HEAD")
		logc <- logOut{out, err}
	}()
	out, err := r.Run(ctx, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
	head := <-logc
	if err != nil {
		return nil, err
	}
	s := parseStatusV2(out)
	// In a repository without commits the log fails and HEAD stays zero.
	if head.err == nil && s.Head.SHA != "" {
		line, _, _ := strings.Cut(head.out, "\n")
		if sha, subj, ok := strings.Cut(line, "\x00"); ok && sha == s.Head.SHA {
			s.Head.Subject = subj
		}
	}
	return s, nil
}

// parseStatusV2 parses `git status --porcelain=v2 --branch -z`.
func parseStatusV2(out string) *Snapshot {
	s := &Snapshot{}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			if oid := strings.TrimPrefix(f, "# branch.oid "); oid != "(initial)" {
				s.Head.SHA = oid
			}
		case strings.HasPrefix(f, "# branch.head "):
			if b := strings.TrimPrefix(f, "# branch.head "); b != "(detached)" {
				s.Branch = b
			}
		case strings.HasPrefix(f, "1 "), strings.HasPrefix(f, "u "):
			// "1 XY sub mH mI mW hH hI path" (u has three modes and hashes
			// more: "u XY sub m1 m2 m3 mW h1 h2 h3 path").
			n := 8
			if f[0] == 'u' {
				n = 10
			}
			if parts := strings.SplitN(f, " ", n+1); len(parts) == n+1 && len(parts[1]) == 2 {
				s.Changes = append(s.Changes, Change{Status: parts[1], Path: parts[n]})
			}
		case strings.HasPrefix(f, "2 "):
			// "2 XY sub mH mI mW hH hI Xscore path", then the original path.
			if parts := strings.SplitN(f, " ", 10); len(parts) == 10 && len(parts[1]) == 2 {
				s.Changes = append(s.Changes, Change{Status: parts[1], Path: parts[9]})
			}
			i++
		case strings.HasPrefix(f, "? "):
			s.Changes = append(s.Changes, Change{Status: "??", Path: f[2:]})
		}
	}
	for i := range s.Changes {
		s.Changes[i].Status = strings.ReplaceAll(s.Changes[i].Status, ".", " ")
	}
	return s
}
