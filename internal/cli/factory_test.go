package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/fsstore"
)

// Commands get the context store from Factory.OpenStore, opened once, at
// the root --root names.
func TestFactoryOpenStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := t.TempDir() // the store a test hands in, elsewhere
	if _, err := fsstore.Open(other, fsstore.Options{}).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	var roots []string
	var out, errb bytes.Buffer
	f := &Factory{
		IO: IO{In: strings.NewReader(""), Out: &out, Err: &errb}, Now: time.Now, Getenv: func(string) string { return "" },
		WorkDir: dir, Version: "test",
		OpenStore: func(root string) *fsstore.Store {
			roots = append(roots, root)
			return fsstore.Open(other, fsstore.Options{})
		},
	}
	if code := Main(context.Background(), []string{"root", "--root", "proj", "--json"}, f); code != 0 {
		t.Fatalf("baton root = exit %d: %s", code, errb.String())
	}
	if want := filepath.Join(dir, "proj"); len(roots) != 1 || roots[0] != want {
		t.Errorf("OpenStore called with %q, want once with %s", roots, want)
	}
	if !strings.Contains(out.String(), `"has_store": true`) {
		t.Errorf("baton root --json = %s, want the injected store", out.String())
	}
}
