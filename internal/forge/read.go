package forge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/gitx"
)

// Reading a delivery's work for a person: what the plan says and what
// the work branch changes, read from the repository cache's refs with
// read-only git (show, diff), never a checkout or a fetch. The cache
// holds what the delivery's phases put there: the work branch as it was
// last committed or fetched, the base as last synced.

// readCache opens the cache of d's repository for reading, and returns
// the commit of d's work branch ("" when the cache has none) and the
// name of its base branch.
func (w *Workspaces) readCache(d *baton.Delivery) (r *gitx.Repo, l gitx.Layout, work, base string, err error) {
	dir := w.CacheDir(d.Repository)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return nil, l, "", "", baton.Errorf(baton.NotFound, "delivery %s has no work on this server yet: no phase has run here", d.ID)
	}
	if l, err = gitx.FindLayout(dir); err != nil {
		return nil, l, "", "", baton.WrapError(baton.Unavailable, err, "open the repository cache of %s", d.Repository)
	}
	r = &gitx.Repo{Dir: dir, Files: &l}
	c := &cache{Repo: r, files: l}
	for _, ref := range []string{branchRef(d.WorkBranch()), trackingRef(d.WorkBranch())} {
		if work, err = c.readRef(context.Background(), ref); err != nil || work != "" {
			break
		}
	}
	if err != nil {
		return nil, l, "", "", err
	}
	base = d.Config.BaseBranch
	if base == "" {
		base, _, _ = l.Head()
	}
	return r, l, work, base, nil
}

// WorkFile returns path as the head of d's work branch has it, at most
// limit bytes (cut says there was more). Errors are NotFound when the
// branch or the file is not there.
func (w *Workspaces) WorkFile(ctx context.Context, d *baton.Delivery, path string, limit int64) (text string, cut bool, err error) {
	r, _, work, _, err := w.readCache(d)
	if err != nil {
		return "", false, err
	}
	if work == "" {
		return "", false, baton.Errorf(baton.NotFound, "delivery %s has no work branch yet", d.ID)
	}
	out, cut, err := r.RunLimit(ctx, limit, "cat-file", "blob", work+":"+path)
	if err != nil {
		return "", false, baton.Errorf(baton.NotFound, "the work branch of %s has no %s", d.ID, path)
	}
	return string(out), cut, nil
}

// DiffLimits bound what WorkDiff reads.
type DiffLimits struct {
	Files   int   // files listed
	PerFile int64 // bytes of one file's patch
	Total   int64 // bytes of all patches
}

// DefaultDiffLimits keep a diff readable in a page: 300 files, 64 KiB
// of one file's changes, 1 MiB in all.
var DefaultDiffLimits = DiffLimits{Files: 300, PerFile: 64 << 10, Total: 1 << 20}

// Diff is what a work branch changes against its base.
type Diff struct {
	Base, Work       string // branch names
	BaseSHA, WorkSHA string // the merge base and the work branch's head
	Files            []FileDiff
	// Omitted counts the changed paths past DiffLimits.Files (a rename
	// among them counts as its two paths: finding it would mean diffing
	// them all); Cut says the patches stopped at DiffLimits.Total (files
	// after it have none).
	Omitted int
	Cut     bool
	Added   int // lines, over every listed text file
	Deleted int
	// NotMerged lists the paths the work branch changes that its merge
	// leaves as the base has them (the plan, docs/plan.md, merged
	// locally): they are not in Files and not counted, so the diff is
	// the change that lands.
	NotMerged []string
}

// FileDiff is one changed file.
type FileDiff struct {
	Path    string
	OldPath string // for a rename or copy
	// Status is git's letter: A(dded), M(odified), D(eleted), R(enamed),
	// C(opied), T(ype changed).
	Status  string
	Added   int
	Deleted int
	Binary  bool
	// Patch is the file's hunks (from the first "@@"), at most
	// DiffLimits.PerFile bytes; Cut says there was more.
	Patch string
	Cut   bool
	// Hidden counts the characters of Patch that a reader cannot see or
	// that reorder what they see (baton.HiddenChars): bidirectional
	// controls and zero-width characters, which make code read
	// differently from what it does.
	Hidden int
}

// WorkDiff returns the change d's merge lands: what its work branch
// changes against the point where it left its base branch (git diff
// base...work) less the paths the merge leaves out (NotMerged), bounded
// by lim. Errors are NotFound when there is no work branch yet.
//
// A diff of a great many files costs in what git compares, not in what
// the page shows: the changed files are first listed from the trees
// alone (no file read, no rename detection), and when there are more
// than lim.Files, the counts, renames and patches are asked for the
// first lim.Files of them only. The result is kept per work commit,
// merge base and limits (the last diffCacheSize of them), so another
// view of the same work costs nothing; treat it as read-only.
func (w *Workspaces) WorkDiff(ctx context.Context, d *baton.Delivery, lim DiffLimits) (*Diff, error) {
	r, l, work, base, err := w.readCache(d)
	if err != nil {
		return nil, err
	}
	if work == "" {
		return nil, baton.Errorf(baton.NotFound, "delivery %s has no work branch yet", d.ID)
	}
	baseSHA := ""
	for _, ref := range []string{trackingRef(base), branchRef(base)} {
		if sha, ok, _ := l.ReadRef(ref); ok {
			baseSHA = sha
			break
		}
	}
	if baseSHA == "" {
		if baseSHA, err = r.RevParse(ctx, trackingRef(base)); err != nil {
			return nil, baton.Errorf(baton.NotFound, "the cache of %s has no base branch %s to compare with", d.Repository, base)
		}
	}
	mb, err := r.Run(ctx, "merge-base", baseSHA, work)
	if err != nil {
		return nil, baton.WrapError(baton.NotFound, err, "the work branch of %s shares no history with %s", d.ID, base)
	}
	from := strings.TrimSpace(mb)
	key := diffKey{cache: r.Dir, from: from, work: work, lim: lim, notMerged: strings.Join(NotMerged(d), "\x00")}
	if diff, ok := w.diffs.get(key); ok {
		cp := *diff
		cp.Base, cp.Work = base, d.WorkBranch()
		return &cp, nil
	}
	out := &Diff{Base: base, Work: d.WorkBranch(), BaseSHA: from, WorkSHA: work}
	leftOut := NotMerged(d)
	// Never a program of the repository's choosing: no external diff
	// drivers, no textconv filters. Paths given are paths, not patterns.
	r = &gitx.Repo{Dir: r.Dir, Files: r.Files, Env: []string{"GIT_LITERAL_PATHSPECS=1"}}
	common := []string{"-c", "core.quotePath=false", "diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M", from, work}
	var only []string // the paths to compare, when not all
	if lim.Files > 0 {
		listed, total, skipped, err := listChanges(ctx, r, from, work, lim.Files, leftOut)
		if err != nil {
			return nil, baton.WrapError(baton.Unavailable, err, "list the changes of %s", d.ID)
		}
		out.NotMerged = skipped
		if total > lim.Files {
			out.Omitted = total - len(listed)
			only = append([]string{"--"}, listed...)
		}
	}
	raw, _, err := r.RunLimit(ctx, 8<<20, slices.Concat(common, []string{"--raw", "--numstat", "-z"}, only)...)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "list the changes of %s", d.ID)
	}
	files := ParseRawNumstat(raw)
	patch, cut, err := r.RunLimit(ctx, lim.Total, slices.Concat(common, only)...)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "diff the work of %s", d.ID)
	}
	parts := SplitPatch(patch)
	files, parts, dropped := dropPaths(files, parts, leftOut)
	if len(dropped) > 0 {
		out.NotMerged = dropped
	}
	if lim.Files > 0 && len(files) > lim.Files {
		out.Omitted += len(files) - lim.Files
		files = files[:lim.Files]
	}
	for _, f := range files {
		out.Added += f.Added
		out.Deleted += f.Deleted
	}
	out.Cut = cut
	for i, p := range parts {
		if i >= len(files) {
			break
		}
		h := hunks(p)
		if lim.PerFile > 0 && int64(len(h)) > lim.PerFile {
			h = h[:lineStart(h, int(lim.PerFile))]
			files[i].Cut = true
		}
		files[i].Patch = string(h)
		files[i].Hidden = baton.HiddenChars(files[i].Patch)
	}
	if cut {
		// The last patch read may be incomplete.
		if n := len(parts); n > 0 && n <= len(files) {
			files[n-1].Cut = true
		}
	}
	out.Files = files
	w.diffs.put(key, out)
	return out, nil
}

// NotMerged lists the paths d's work branch may change that its merge
// leaves as the base has them: the plan, when a local repository merges
// by squash or merge commit (Local.Merge). On GitHub the pull request is
// merged as verified, plan included, and a rebase lands the branch as
// it is.
func NotMerged(d *baton.Delivery) []string {
	if d.Forge == baton.ForgeLocal && d.Config.MergeMethod != baton.MergeRebase {
		return []string{PlanPath}
	}
	return nil
}

// dropPaths takes the files whose path is in drop out of files and out
// of parts, their patches in the same order, and says which it took.
// A rename counts by its new path: its old one is deleted as the merge
// has it.
func dropPaths(files []FileDiff, parts [][]byte, drop []string) ([]FileDiff, [][]byte, []string) {
	if len(drop) == 0 {
		return files, parts, nil
	}
	var keptFiles []FileDiff
	var keptParts [][]byte
	var dropped []string
	for i, f := range files {
		if slices.Contains(drop, f.Path) {
			dropped = append(dropped, f.Path)
			continue
		}
		keptFiles = append(keptFiles, f)
		if i < len(parts) {
			keptParts = append(keptParts, parts[i])
		}
	}
	return keptFiles, keptParts, dropped
}

// maxPathspecBytes bounds the paths given to git on its command line
// when a diff is asked for some files only (the system's limit on
// arguments is 2 MiB or more).
const maxPathspecBytes = 256 << 10

// listChanges lists the paths that differ between commits from and to,
// in git's order, from the trees alone: their first max (fewer when
// their names would pass maxPathspecBytes), and how many there are,
// the paths in skip neither listed nor counted but returned apart.
func listChanges(ctx context.Context, r *gitx.Repo, from, to string, max int, skip []string) (paths []string, total int, skipped []string, err error) {
	size := 0
	err = r.Stream(ctx, func(out io.Reader) error {
		br := bufio.NewReaderSize(out, 64<<10)
		for {
			meta, err := br.ReadSlice(0)
			if err == io.EOF && len(meta) == 0 {
				return nil
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return err
			}
			if len(meta) == 0 || meta[0] != ':' {
				return fmt.Errorf("git diff --raw printed %q, not a record", meta)
			}
			path, err := br.ReadBytes(0)
			if err != nil {
				return fmt.Errorf("git diff --raw: a record without its path: %w", err)
			}
			if p := string(path[:len(path)-1]); slices.Contains(skip, p) {
				skipped = append(skipped, p)
				continue
			}
			total++
			if len(paths) < max && size+len(path) <= maxPathspecBytes {
				paths = append(paths, string(path[:len(path)-1]))
				size += len(path)
			}
		}
	}, "-c", "core.quotePath=false", "diff", "--raw", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", from, to)
	return paths, total, skipped, err
}

// diffCacheSize is how many diffs Workspaces keeps: a page view each.
const diffCacheSize = 32

// diffKey names a diff: the same commits under the same limits.
type diffKey struct {
	cache, from, work string
	lim               DiffLimits
	notMerged         string // NotMerged's paths, joined
}

// diffCache keeps the last diffs made, the oldest dropped first.
type diffCache struct {
	mu    sync.Mutex
	order []diffKey
	diffs map[diffKey]*Diff
}

func (c *diffCache) get(k diffKey) (*Diff, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.diffs[k]
	return d, ok
}

func (c *diffCache) put(k diffKey, d *Diff) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.diffs == nil {
		c.diffs = map[diffKey]*Diff{}
	}
	if _, ok := c.diffs[k]; !ok {
		c.order = append(c.order, k)
	}
	c.diffs[k] = d
	for len(c.order) > diffCacheSize {
		delete(c.diffs, c.order[0])
		c.order = c.order[1:]
	}
}

// ParseRawNumstat parses `git diff --raw --numstat -z`: the raw records
// (":mode mode sha sha STATUS\0path\0[path\0]") first, then the numstat
// records ("added\tdeleted\tpath\0", or "added\tdeleted\t\0old\0new\0"
// for a rename), one of each per file in the same order. Binary files
// count "-" lines. Whatever does not parse ends the list.
func ParseRawNumstat(b []byte) []FileDiff {
	fields := bytes.Split(b, []byte{0})
	var files []FileDiff
	i := 0
	for i < len(fields) && bytes.HasPrefix(fields[i], []byte(":")) {
		meta := strings.Fields(string(fields[i]))
		if len(meta) != 5 || i+1 >= len(fields) {
			return files
		}
		st := meta[4]
		f := FileDiff{Status: st[:1]}
		if st[0] == 'R' || st[0] == 'C' {
			if i+2 >= len(fields) {
				return files
			}
			f.OldPath, f.Path = string(fields[i+1]), string(fields[i+2])
			i += 3
		} else {
			f.Path = string(fields[i+1])
			i += 2
		}
		files = append(files, f)
	}
	for n := range files {
		if i >= len(fields) {
			break
		}
		parts := strings.SplitN(string(fields[i]), "\t", 3)
		if len(parts) != 3 {
			break
		}
		i++
		if parts[2] == "" { // a rename: two more fields name it
			i += 2
		}
		if parts[0] == "-" && parts[1] == "-" {
			files[n].Binary = true
			continue
		}
		a, err1 := strconv.Atoi(parts[0])
		dl, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil || a < 0 || dl < 0 {
			break
		}
		files[n].Added, files[n].Deleted = a, dl
	}
	return files
}

// SplitPatch splits the output of `git diff` into one patch per file:
// each begins at a line "diff --git ". No line of a hunk can begin so
// (hunk lines begin with " ", "+", "-", "\" or "@@"). A file whose type
// changed (a file replaced by a link) is two blocks under one header,
// the old one's deletion and the new one's creation, and one patch here,
// as it is one file to --raw.
func SplitPatch(b []byte) [][]byte {
	var out [][]byte
	start := -1
	var header []byte
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		end := len(b)
		if j >= 0 {
			end = i + j + 1
		}
		if line := b[i:end]; bytes.HasPrefix(line, []byte("diff --git ")) && !bytes.Equal(line, header) {
			if start >= 0 {
				out = append(out, b[start:i])
			}
			start, header = i, line
		}
		i = end
	}
	if start >= 0 {
		out = append(out, b[start:])
	}
	return out
}

// hunks is a file's patch from its first hunk header on ("Binary files
// … differ" for a binary file, nothing for a change of mode only).
func hunks(p []byte) []byte {
	if bytes.HasPrefix(p, []byte("@@")) {
		return p
	}
	if i := bytes.Index(p, []byte("\n@@")); i >= 0 {
		return p[i+1:]
	}
	if i := bytes.Index(p, []byte("\nBinary files ")); i >= 0 {
		return p[i+1:]
	}
	return nil
}

// lineStart is the start of the line holding byte n of b: a cut patch
// ends with a whole line.
func lineStart(b []byte, n int) int {
	if i := bytes.LastIndexByte(b[:n], '\n'); i >= 0 {
		return i + 1
	}
	return n
}
