package gitx

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	gittest.Setenv(t)
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	r := Open(dir)
	s, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Branch != "main" || s.Head.SHA != "" || len(s.Changes) != 0 {
		t.Errorf("empty repo snapshot = %+v", s)
	}
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "a\n")
	write("old name.go", "same content for rename detection\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "first: commit")
	write("a.go", "changed\n")
	write("dir/new file.txt", "x\n")
	gittest.Git(t, dir, "mv", "old name.go", "new name.go")
	s, err = r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head(ctx)
	if s.Head != head || s.Head.Subject != "first: commit" {
		t.Errorf("Head = %+v, want %+v", s.Head, head)
	}
	want := []Change{{Status: " M", Path: "a.go"}, {Status: "R ", Path: "new name.go"}, {Status: "??", Path: "dir/new file.txt"}}
	if diff := cmp.Diff(want, s.Changes); diff != "" {
		t.Errorf("Changes mismatch (-want +got):\n%s", diff)
	}
	gittest.Git(t, dir, "checkout", "-q", "--detach")
	if s, _ := r.Snapshot(ctx); s.Branch != "" {
		t.Errorf("detached Branch = %q, want empty", s.Branch)
	}
	if _, err := Open(t.TempDir()).Snapshot(ctx); err == nil {
		t.Error("Snapshot outside a repository succeeded")
	}
}

// FuzzParseStatusV2 builds `git status --porcelain=v2 --branch -z`
// output from a fuzzed model (branch headers, ordinary, unmerged, renamed
// and untracked entries, and lines the parser must skip) and checks that
// parsing it gives back exactly the model's branch, HEAD and changes.
// Paths may hold spaces and look like entries of their own ("1 x", "? y"),
// which a parser that loses its place in the fields would take as one.
func FuzzParseStatusV2(f *testing.F) {
	f.Add([]byte("main\x00abc\x00"), []byte("\x00a.go\x01R. new name\x00? old\x02x\x03y\x04UU c.go"))
	f.Add([]byte("\x00(initial)\x00"), []byte("\x021 fake\x00? also fake"))
	f.Fuzz(func(t *testing.T, header, entries []byte) {
		branch, oid, _ := strings.Cut(string(header), "\x00")
		oid, _, _ = strings.Cut(oid, "\x00")
		if strings.ContainsAny(branch+oid, "\x00") {
			return
		}
		var out strings.Builder
		want := &Snapshot{}
		if branch != "" {
			fmt.Fprintf(&out, "# branch.head %s\x00", branch)
			if branch != "(detached)" {
				want.Branch = branch
			}
		}
		if oid != "" {
			fmt.Fprintf(&out, "# branch.oid %s\x00", oid)
			if oid != "(initial)" {
				want.Head.SHA = oid
			}
		}
		out.WriteString("# branch.ab +1 -2\x00")
		xy := func(b byte) string {
			const codes = ".MTADRCU"
			return string([]byte{codes[int(b)%len(codes)], codes[int(b/8)%len(codes)]})
		}
		status := func(s string) string { return strings.ReplaceAll(s, ".", " ") }
		// Each entry: a kind byte, then its path (and for a rename the
		// original path after a \x00); entries are separated by \x01..\x04,
		// whose value picks the next entry's kind too.
		for _, e := range strings.FieldsFunc(string(entries), func(r rune) bool { return r >= 1 && r <= 4 }) {
			if e == "" {
				continue
			}
			kind, rest := e[0], e[1:]
			path, orig, _ := strings.Cut(rest, "\x00")
			orig, _, _ = strings.Cut(orig, "\x00")
			if path == "" {
				continue
			}
			switch code := xy(kind); kind % 4 {
			case 0:
				fmt.Fprintf(&out, "1 %s N... 100644 100644 100644 %s %s %s\x00", code, strings.Repeat("a", 40), strings.Repeat("b", 40), path)
				want.Changes = append(want.Changes, Change{Status: status(code), Path: path})
			case 1:
				fmt.Fprintf(&out, "2 %s N... 100644 100644 100644 %s %s R87 %s\x00%s\x00", code, strings.Repeat("c", 40), strings.Repeat("d", 40), path, orig)
				want.Changes = append(want.Changes, Change{Status: status(code), Path: path})
			case 2:
				fmt.Fprintf(&out, "u %s N... 100644 100644 100644 100644 %s %s %s %s\x00", code, strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40), path)
				want.Changes = append(want.Changes, Change{Status: status(code), Path: path})
			case 3:
				if kind%8 == 3 {
					fmt.Fprintf(&out, "? %s\x00", path)
					want.Changes = append(want.Changes, Change{Status: "??", Path: path})
				} else {
					fmt.Fprintf(&out, "! %s\x00", path) // ignored files are not changes
				}
			}
		}
		got := parseStatusV2(out.String())
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("parseStatusV2(%q) mismatch (-want +got):\n%s", out.String(), diff)
		}
	})
}
