package cli

import (
	"context"
	"fmt"
	"path/filepath"

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

// ensureStore opens the store and creates it when missing, with a one-line
// notice on stderr, for commands that write.
func (f *Factory) ensureStore(ctx context.Context) (*fsstore.Store, error) {
	st := f.Store()
	if st.Exists() {
		return st, nil
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
