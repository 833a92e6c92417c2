package brief

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
)

// ReviewContext is the deterministic context of a pull request review. Close it
// to release the spooled diff.
type ReviewContext struct {
	Repo  github.Repo
	PR    *github.PullRequest
	Files []github.File
	// LinkedIssues are the issues the pull request closes when merged
	// (closingIssuesReferences), titles and URLs only.
	LinkedIssues []github.LinkedIssue
	// Diff indexes the unified diff held in the spool.
	Diff *DiffIndex
	// DiffSource is DiffFromAPI, or DiffFromPatches when GitHub refused
	// to render a diff this large and it was rebuilt from the files'
	// patches.
	DiffSource string
	spool      *Spool
}

// Where a review's diff came from.
const (
	diffFromAPI     = "diff"
	diffFromPatches = "patches"
)

// Close releases the spooled diff.
func (r *ReviewContext) Close() error {
	if r == nil || r.spool == nil {
		return nil
	}
	return r.spool.Close()
}

// FetchOptions tunes FetchReview.
type FetchOptions struct {
	// SpoolDir is where a diff larger than SpoolMemory goes (os.TempDir()
	// when empty).
	SpoolDir string
	// SpoolMemory is how much of the diff stays in memory; 0 means
	// DefaultSpoolMemory.
	SpoolMemory int
}

// fetchReview reads what a review brief needs, all or nothing: the pull
// request's metadata, its changed files, its diff (streamed into a spool
// and indexed) and the issues it closes. The four reads run concurrently;
// the first failure cancels the others and is returned, and nothing is
// kept. For a pull request with at most 100 files that is 4 requests:
// metadata, one page of files, the diff, one GraphQL query.
//
// When GitHub refuses to render the diff (over 300 files or 20,000
// lines), the diff is rebuilt from the files' patches instead, with no
// further request; DiffSource says so.
func fetchReview(ctx context.Context, c *github.Client, repo github.Repo, number int, opts FetchOptions) (*ReviewContext, error) {
	mem := opts.SpoolMemory
	if mem <= 0 {
		mem = defaultSpoolMemory
	}
	r := &ReviewContext{Repo: repo, DiffSource: diffFromAPI, spool: newSpool(mem, opts.SpoolDir)}
	var tooLarge bool
	err := all(ctx, true,
		func(ctx context.Context) (err error) {
			r.PR, err = c.PullRequest(ctx, repo, number)
			return err
		},
		func(ctx context.Context) (err error) {
			r.Files, err = c.PullRequestFiles(ctx, repo, number)
			return err
		},
		func(ctx context.Context) error {
			rc, err := c.PullRequestDiff(ctx, repo, number)
			if errors.Is(err, github.ErrDiffTooLarge) {
				tooLarge = true
				return nil
			}
			if err != nil {
				return err
			}
			defer rc.Close()
			r.Diff, err = IndexDiff(rc, r.spool)
			if err != nil {
				if baton.ErrorCode(err) == baton.Internal {
					return fmt.Errorf("spool the diff of %s#%d: %w", repo, number, err)
				}
				return err
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			r.LinkedIssues, err = c.ClosingIssues(ctx, repo, number)
			return err
		},
	)
	if err == nil && tooLarge {
		r.DiffSource = diffFromPatches
		err = r.diffFromPatches()
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// all runs fns concurrently and returns the error of the first one (in
// argument order) that failed on its own. With failFast, the first error
// cancels the others, and failures caused by that do not hide it;
// without, every fn runs to its end, which keeps the outcome
// deterministic when one failure explains another.
func all(ctx context.Context, failFast bool, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			if err := fn(ctx); err != nil {
				errs[i] = err
				if failFast {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case baton.ErrorCode(err) == baton.Canceled || errors.Is(err, context.Canceled):
			if canceled == nil {
				canceled = err
			}
		default:
			return err
		}
	}
	return canceled
}

// diffFromPatches writes a git-style diff of the files' patches to the
// spool and indexes it. GitHub gives no patch for binary files and very
// large changes; those get their header only.
func (r *ReviewContext) diffFromPatches() error {
	var b strings.Builder
	for _, f := range r.Files {
		b.Reset()
		writePatchFile(&b, f)
		if _, err := io.WriteString(r.spool, b.String()); err != nil {
			return fmt.Errorf("spool the diff of %s#%d: %w", r.Repo, r.PR.Number, err)
		}
	}
	idx, err := IndexDiff(io.NewSectionReader(r.spool, 0, r.spool.Size()), nil)
	if err != nil {
		return fmt.Errorf("index the diff of %s#%d: %w", r.Repo, r.PR.Number, err)
	}
	r.Diff = idx
	return nil
}

// writePatchFile renders one file as git would: header, then its hunks.
func writePatchFile(b *strings.Builder, f github.File) {
	oldPath := f.Path
	if f.PreviousPath != "" {
		oldPath = f.PreviousPath
	}
	tab := func(p string) string {
		if strings.Contains(p, " ") {
			return p + "\t"
		}
		return p
	}
	fmt.Fprintf(b, "diff --git a/%s b/%s\n", oldPath, f.Path)
	minus, plus := "a/"+oldPath, "b/"+f.Path
	switch f.Status {
	case "added":
		b.WriteString("new file mode 100644\n")
		minus = "/dev/null"
	case "removed":
		b.WriteString("deleted file mode 100644\n")
		plus = "/dev/null"
	case "renamed":
		fmt.Fprintf(b, "rename from %s\nrename to %s\n", oldPath, f.Path)
	case "copied":
		fmt.Fprintf(b, "copy from %s\ncopy to %s\n", oldPath, f.Path)
	}
	if f.Patch == "" {
		return
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", tab(minus), tab(plus))
	b.WriteString(f.Patch)
	if !strings.HasSuffix(f.Patch, "\n") {
		b.WriteByte('\n')
	}
}
