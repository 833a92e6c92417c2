package gitx

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/safefile"
)

// Snapshot is a work tree's state: what a handoff records and a pickup
// compares against.
type Snapshot struct {
	Branch  string   // "" on a detached HEAD
	Head    Commit   // zero in a repository with no commits
	Changes []Change // uncommitted and untracked paths
	// Tracked is how many files git's index holds; 0 when unknown.
	Tracked int
	// Partial is set when the work tree is too large for a whole `git
	// status` on every handoff: Changes then holds only those of Checked
	// (the paths the caller named) whose content differs from HEAD's, as
	// "M" (modified), "A" (not in HEAD) or "D" (deleted).
	Partial bool
	Checked []string
}

// WholeStatusFiles is how many tracked files a work tree may have for a
// snapshot to run a whole `git status`. A status stats every tracked
// file and lists untracked ones by walking the tree: at 100,000 tracked
// and 20,000 untracked files that took 2 s on a 2-core machine (0.3 s
// with untracked files left out, 2 ms per git process that only reads
// HEAD or a few objects); at 1,000 files, 4 ms (docs/benchmarks.md).
const WholeStatusFiles = 2000

// wholeStatusTimeout bounds a whole status in a work tree that tracks few
// files but holds a great many untracked ones; past it the snapshot
// checks the paths it was given instead.
const wholeStatusTimeout = time.Second

// partialTimeout bounds the few small git runs of a partial snapshot.
const partialTimeout = 5 * time.Second

// Subjects remembers commit subjects by object name. What it returns is
// taken as git's answer, so it keeps only what a snapshot gave it.
type Subjects interface {
	CommitSubject(sha string) (subject string, ok bool)
	RememberCommitSubject(sha, subject string)
}

// knownHead is HEAD's commit with the subject r.Subjects remembers for
// it, or the zero Commit when there is none to ask or it knows none.
func (r *Repo) knownHead(l Layout) Commit {
	if r.Subjects == nil {
		return Commit{}
	}
	_, sha, err := l.Head()
	if err != nil || sha == "" {
		return Commit{}
	}
	subject, ok := r.Subjects.CommitSubject(sha)
	if !ok {
		return Commit{}
	}
	return Commit{SHA: sha, Subject: subject}
}

// headLog reads HEAD's object name and subject with `git log`, and
// remembers the subject.
func (r *Repo) headLog(ctx context.Context) (Commit, error) {
	out, err := r.Run(ctx, "log", "-1", "--format=%H%x00%s", "HEAD")
	if err != nil {
		return Commit{}, err
	}
	line, _, _ := strings.Cut(out, "\n")
	sha, subject, ok := strings.Cut(line, "\x00")
	if !ok || !IsObjectName(sha) {
		return Commit{}, fmt.Errorf("git log printed %q", line)
	}
	if r.Subjects != nil {
		r.Subjects.RememberCommitSubject(sha, subject)
	}
	return Commit{SHA: sha, Subject: subject}, nil
}

// Snapshot reads branch, HEAD and the uncommitted changes of the work
// tree. Up to WholeStatusFiles tracked files (or when the index cannot be
// found), the changes come from one `git status` of the whole tree, run
// beside a `git log -1` for HEAD's subject. In a larger work tree only
// paths (relative to r.Dir) are checked, each against HEAD: one `git
// cat-file` for HEAD's objects and one `git hash-object` for the files,
// so the cost follows the paths, not the tree. It returns an error
// outside a work tree.
func (r *Repo) Snapshot(ctx context.Context, paths ...string) (*Snapshot, error) {
	layout, top, tracked, known := r.index()
	limit := r.WholeStatusFiles
	if limit == 0 {
		limit = WholeStatusFiles
	}
	if !known || tracked <= limit {
		var head Commit
		if known {
			head = r.knownHead(layout)
		}
		sctx, cancel := context.WithTimeout(ctx, wholeStatusTimeout)
		s, err := r.wholeSnapshot(sctx, head)
		cancel()
		if err == nil || !known || ctx.Err() != nil || sctx.Err() == nil {
			if s != nil {
				s.Tracked = tracked
			}
			return s, err
		}
	}
	return r.partialSnapshot(ctx, layout, top, tracked, paths)
}

// wholeSnapshot is one `git status --untracked-files=all` and, side by
// side, one `git log -1` for HEAD's subject unless head (when not zero)
// already holds it.
func (r *Repo) wholeSnapshot(ctx context.Context, head Commit) (*Snapshot, error) {
	type logOut struct {
		head Commit
		err  error
	}
	logc := make(chan logOut, 1)
	if head.SHA != "" {
		logc <- logOut{head: head}
	} else {
		go func() {
			c, err := r.headLog(ctx)
			logc <- logOut{c, err}
		}()
	}
	// --no-ahead-behind: the snapshot records no distance from the
	// upstream, and counting it walks every commit between the two (12
	// to 19 ms a status at 200 ahead and 2,000 behind, 4 to 6 without).
	out, err := r.Run(ctx, "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z", "--untracked-files=all")
	log := <-logc
	if err != nil {
		return nil, err
	}
	s := parseStatusV2(out)
	if s.Head.SHA != "" && log.err == nil && log.head.SHA != s.Head.SHA && head.SHA != "" {
		// HEAD moved between the two reads: ask git about the one the
		// status saw.
		log.head, log.err = r.headLog(ctx)
	}
	// In a repository without commits the log fails and HEAD stays zero.
	if log.err == nil && s.Head.SHA != "" && log.head.SHA == s.Head.SHA {
		s.Head.Subject = log.head.Subject
	}
	return s, nil
}

// index finds the repository around r.Dir and counts the files its index
// holds, from the index file's header, without running git. known is
// false when git's environment points elsewhere or no repository is
// found: then only git can say.
func (r *Repo) index() (l Layout, top string, tracked int, known bool) {
	if r.Files == nil {
		for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"} {
			if os.Getenv(v) != "" {
				return Layout{}, "", 0, false
			}
		}
	}
	dir, err := filepath.Abs(r.Dir)
	if err != nil {
		return Layout{}, "", 0, false
	}
	if r.Files != nil {
		l, top = *r.Files, dir
	} else {
		for top = dir; ; top = filepath.Dir(top) {
			if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
				break
			}
			if filepath.Dir(top) == top {
				return Layout{}, "", 0, false
			}
		}
		if l, err = FindLayout(top); err != nil {
			return Layout{}, "", 0, false
		}
	}
	f, err := safefile.OpenRegular(filepath.Join(l.GitDir, "index"))
	if err != nil {
		return l, top, 0, os.IsNotExist(err) // no index: nothing tracked yet
	}
	defer f.Close()
	var head [12]byte
	n, _ := f.ReadAt(head[:], 0)
	tracked, ok := indexEntries(head[:n])
	return l, top, tracked, ok
}

// indexEntries reads the entry count from the header of git's index file
// ("DIRC", version 2 to 4, entries, all big-endian).
func indexEntries(head []byte) (int, bool) {
	if len(head) < 12 || string(head[:4]) != "DIRC" {
		return 0, false
	}
	if v := binary.BigEndian.Uint32(head[4:8]); v < 2 || v > 4 {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(head[8:12])), true
}

// partialSnapshot reads branch and HEAD from the repository's files (git
// when it keeps them otherwise) and compares each of paths with HEAD.
func (r *Repo) partialSnapshot(ctx context.Context, l Layout, top string, tracked int, paths []string) (*Snapshot, error) {
	s := &Snapshot{Tracked: tracked, Partial: true}
	branch, sha, err := l.Head()
	if err != nil {
		if branch, err = r.Branch(ctx); err != nil {
			return nil, err
		}
		sha = ""
	}
	s.Branch = branch

	// Which paths to compare: inside the work tree, as git can name them.
	type file struct {
		path string // as given
		rel  string // "./"-relative to r.Dir, for git
		mode os.FileMode
		gone bool
	}
	var files []file
	dir, _ := filepath.Abs(r.Dir)
	realTop, err := filepath.EvalSymlinks(top)
	if err != nil {
		realTop = top
	}
	for _, p := range paths {
		abs := filepath.Join(dir, p)
		if strings.ContainsAny(p, "\n\x00") || !inside(top, abs) {
			continue
		}
		// The paths come from a packet, which anyone can commit: one
		// through a linked directory (lnk/x, lnk -> /) would have git
		// read a file outside the work tree.
		if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil && real != realTop && !inside(realTop, real) {
			continue
		}
		rel, err := filepath.Rel(top, abs)
		if err != nil {
			continue
		}
		f := file{path: p, rel: filepath.ToSlash(rel)}
		if fi, err := os.Lstat(abs); err != nil {
			f.gone = true
		} else if fi.IsDir() {
			continue
		} else {
			f.mode = fi.Mode()
		}
		files = append(files, f)
		s.Checked = append(s.Checked, p)
	}

	// Git runs at the top, where hash-object and check-ignore read the
	// paths they are given from (whatever directory they start in).
	// As r otherwise: its environment and how it starts git (a sandbox's
	// Start) hold for these too.
	atTop := *r
	atTop.Dir = top
	// Bounded like a whole status: a file swapped for a FIFO after the
	// Lstat above must not hold a hook.
	ctx, cancel := context.WithTimeout(ctx, partialTimeout)
	defer cancel()
	var (
		wg             sync.WaitGroup
		logHead        Commit
		catOut         string
		logErr, catErr error
		hashOut        string
		hashErr        error
		hashed         []string
	)
	if known := r.knownHead(l); sha != "" && known.SHA == sha {
		logHead = known
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logHead, logErr = r.headLog(ctx)
		}()
	}
	if len(files) > 0 {
		var objs, regular strings.Builder
		for _, f := range files {
			fmt.Fprintf(&objs, "HEAD:%s\n", f.rel)
			if !f.gone && f.mode.IsRegular() {
				regular.WriteString(f.rel + "\n")
				hashed = append(hashed, f.rel)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			catOut, catErr = atTop.RunInput(ctx, objs.String(), "cat-file", "--batch-check")
		}()
		if len(hashed) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hashOut, hashErr = atTop.RunInput(ctx, regular.String(), "hash-object", "--stdin-paths")
			}()
		}
	}
	wg.Wait()
	if logErr == nil {
		if sha == "" || logHead.SHA == sha {
			s.Head = logHead
		}
	} else if sha != "" {
		s.Head = Commit{SHA: sha}
	}
	if len(files) == 0 || catErr != nil || hashErr != nil {
		return s, nil // nothing to compare, or git could not say: no change claimed
	}
	inHead := parseBatchCheck(catOut, len(files))
	worktree := map[string]string{}
	for i, h := range strings.Fields(hashOut) {
		if i < len(hashed) {
			worktree[hashed[i]] = h
		}
	}
	// Whether a file is ignored matters only for one HEAD lacks: git is
	// asked about those alone, and not at all when there are none (a
	// packet's files are mostly tracked).
	var untracked strings.Builder
	for i, f := range files {
		if inHead[i].name == "" && !f.gone && f.mode.IsRegular() {
			untracked.WriteString(f.rel + "\x00")
		}
	}
	ignored := map[string]bool{}
	if untracked.Len() > 0 {
		// Exit status 1 means none is ignored.
		// -z: paths as they are, not quoted (core.quotePath).
		out, _ := atTop.RunInput(ctx, untracked.String(), "check-ignore", "--no-index", "--stdin", "-z")
		for _, p := range strings.Split(out, "\x00") {
			ignored[p] = true
		}
	}
	for i, f := range files {
		obj := inHead[i]
		var now string
		switch {
		case f.gone:
		case f.mode.IsRegular():
			now = worktree[f.rel]
		case f.mode&os.ModeSymlink != 0:
			now = linkObject(filepath.Join(dir, f.path), len(obj.name))
		}
		switch {
		case obj.name == "" && !f.gone && !ignored[f.rel]:
			s.Changes = append(s.Changes, Change{Status: "A", Path: f.path})
		case obj.name != "" && f.gone:
			s.Changes = append(s.Changes, Change{Status: "D", Path: f.path})
		case obj.name != "" && now != "" && now != obj.name:
			s.Changes = append(s.Changes, Change{Status: "M", Path: f.path})
		}
	}
	return s, nil
}

// inside reports whether p is in the work tree at top, not in its .git.
func inside(top, p string) bool {
	rel, err := filepath.Rel(top, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") &&
		rel != ".git" && !strings.HasPrefix(rel, ".git/")
}

// headObject is what `git cat-file --batch-check` said of one path at
// HEAD: its object name when it is a file there, "" when HEAD has no
// file at that path.
type headObject struct {
	name string
}

// parseBatchCheck reads n answers of `git cat-file --batch-check`:
// "<object> <type> <size>" for what exists, "<name> missing" (or
// "ambiguous") for what does not. Only blobs are files; a line that
// reads otherwise, or a missing answer, counts as no file at HEAD.
func parseBatchCheck(out string, n int) []headObject {
	res := make([]headObject, n)
	lines := strings.Split(out, "\n")
	for i := 0; i < n && i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) == 3 && f[1] == "blob" && IsObjectName(f[0]) {
			res[i].name = f[0]
		}
	}
	return res
}

// linkObject is the object name git gives a symlink: the blob of its
// target, hashed as the repository hashes (by the length of its object
// names; SHA-1 when unknown).
func linkObject(path string, nameLen int) string {
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	var h hash.Hash = sha1.New()
	if nameLen == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(target))
	h.Write([]byte(target))
	return hex.EncodeToString(h.Sum(nil))
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
