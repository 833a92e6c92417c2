package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// projectRoot resolves the project root: --root, else BATON_ROOT, else
// discovery from the working directory.
func (f *Factory) projectRoot() (string, fsstore.Found) {
	for _, r := range []string{f.rootFlag, f.env("BATON_ROOT")} {
		if r != "" {
			if !filepath.IsAbs(r) {
				r = filepath.Join(f.WorkDir, r)
			}
			return filepath.Clean(r), "override"
		}
	}
	return fsstore.Discover(f.WorkDir)
}

// Store opens the project's context store (without creating it).
func (f *Factory) Store() *fsstore.Store {
	if f.store == nil {
		root, _ := f.projectRoot()
		if f.OpenStore != nil {
			f.store = f.OpenStore(root)
		} else {
			f.store = fsstore.Open(root, fsstore.Options{Now: f.now})
		}
	}
	return f.store
}

// checkExplicitRoot refuses a root named by --root or BATON_ROOT that is
// not an existing directory: a typo must not create a store somewhere
// new.
func (f *Factory) checkExplicitRoot() error {
	root, how := f.projectRoot()
	if how != "override" {
		return nil
	}
	from := "--root"
	if f.rootFlag == "" {
		from = "BATON_ROOT"
	}
	fi, err := os.Stat(root)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return baton.Errorf(baton.NotFound, "the project root %s (from %s) does not exist: fix the path, or create the directory first", root, from)
	case err != nil:
		return baton.WrapError(baton.Invalid, err, "the project root %s (from %s)", root, from)
	case !fi.IsDir():
		return baton.Errorf(baton.Invalid, "the project root %s (from %s) is not a directory", root, from)
	}
	return nil
}

// ensureStore opens the store and creates it when missing, with a one-line
// notice on stderr, for commands that write.
func (f *Factory) ensureStore(ctx context.Context) (*fsstore.Store, error) {
	st := f.Store()
	if st.Exists() {
		return st, nil
	}
	if err := f.checkExplicitRoot(); err != nil {
		return nil, err
	}
	created, err := st.Init(ctx)
	if err != nil {
		return nil, err
	}
	if created {
		fmt.Fprintf(f.IO.Err, "baton: created the context store %s\n", st.Dir())
	}
	return st, nil
}
