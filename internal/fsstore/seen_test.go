package fsstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// parseSeen reads a whole LoopsSeenFile into a map, keeping the last
// well-formed line of each valid id: what a lookup (seenLines.find) must
// answer, line by line.
func parseSeen(b []byte) map[string]seenLoop {
	rest, ok := bytes.CutPrefix(b, []byte(seenHeader))
	if !ok {
		return nil
	}
	seen := map[string]seenLoop{}
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		if id, r, ok := parseSeenFields(line); ok && baton.ValidID(string(id)) {
			seen[string(id)] = r
		}
	}
	return seen
}

// records is the map as formatSeen takes it.
func records(m map[string]seenLoop) []seenRecord {
	var out []seenRecord
	for id, r := range m {
		out = append(out, seenRecord{id, r})
	}
	return out
}

// The record of loop files parses back to what was written, and whatever
// a damaged or hostile file holds parses to valid records only.
func FuzzSeenFormat(f *testing.F) {
	f.Add([]byte(seenHeader+"20260101T000000Z-a 12 345 1700000000123456789 1700000000123456789 0011aabb 1\n"), uint64(7), int64(1))
	f.Add([]byte("{\"x\":{\"s\":1}}"), uint64(0), int64(0))
	f.Add([]byte(seenHeader+"bad id 1 2 3 4 - 0\n../x 1 2 3 4 - 1\n"), uint64(1), int64(-1))
	f.Add([]byte(seenHeader+"20260101T000000Z-b 1 2 3 4 - 0\n20260101T000000Z-a 5 6 7 8 ab 1\n20260101T000000Z-a 9 x 7 8 ab 1\n20260101T000000Z-b 1 2 3 4 - 1\n"), uint64(3), int64(2))
	f.Fuzz(func(t *testing.T, b []byte, ino uint64, n int64) {
		got := parseSeen(b)
		for id, r := range got {
			if !baton.ValidID(id) || bytes.ContainsAny([]byte(r.Active), " \n") {
				t.Fatalf("parseSeen kept %q: %+v", id, r)
			}
		}
		// The lookup session-start makes answers as the whole parse, for
		// every id a line names.
		lines := indexSeen(b)
		for _, line := range lines {
			id := string(seenID(line))
			r, ok := lines.find(id)
			if want, wok := got[id]; ok != wok || r != want {
				t.Fatalf("indexSeen(...).find(%q) = %+v, %v; parseSeen has %+v, %v", id, r, ok, want, wok)
			}
		}
		for id, want := range got {
			if r, ok := lines.find(id); !ok || r != want {
				t.Fatalf("indexSeen(...).find(%q) = %+v, %v; parseSeen has %+v", id, r, ok, want)
			}
		}
		if again := parseSeen(formatSeen(records(got))); !maps.Equal(again, got) && len(got) > 0 {
			t.Fatalf("round trip of a parsed record changed it:\n%v\n%v", got, again)
		}
		want := map[string]seenLoop{
			"20260101T000000Z-a": {FileID: safefile.FileID{Ino: ino, Size: n, Mod: -n, Change: n / 3}, Active: fmt.Sprintf("%x", ino), Told: n%2 == 0},
			"20260101T000000Z-b": {FileID: safefile.FileID{Ino: ino / 2, Size: n / 7}},
		}
		if got := parseSeen(formatSeen(records(want))); !maps.Equal(got, want) {
			t.Fatalf("parseSeen(formatSeen(%v)) = %v", want, got)
		}
	})
}

// NewForeignLoops, which reads only the loop files whose stat changed,
// answers as a scan that reads every loop file each time does, whatever a
// checkout, an editor or baton itself does to the files between two
// calls: files replaced, rewritten in place at the same size with their
// time set back, removed, replaced by links, adopted, updated. Each byte
// pair of the input is one change (which, and to which of four loops).
func FuzzNewForeignLoopsAnswersAsAScan(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 9, 0, 3, 1, 9, 0, 3, 1, 2, 1, 9, 0, 2, 1})
	f.Add([]byte{1, 2, 9, 0, 6, 2, 9, 0, 3, 2, 9, 0, 7, 2, 9, 0, 8, 2, 4, 2, 1, 2})
	f.Add([]byte{0, 3, 5, 3, 9, 0, 1, 3, 6, 3, 4, 3, 6, 0, 1, 3})
	f.Add([]byte{1, 0, 1, 1, 1, 2, 1, 3, 9, 0, 2, 0, 2, 1, 9, 0, 2, 0, 2, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 40 {
			ops = ops[:40]
		}
		s := Open(t.TempDir(), Options{})
		ctx := context.Background()
		if _, err := s.Init(ctx); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(t.TempDir(), "outside.md")
		ids := make([]string, 4)
		for k := range ids {
			ids[k] = fmt.Sprintf("20260101T00000%dZ-loop-%d", k, k)
		}
		encode := func(id, status, prompt string) []byte {
			l := &baton.Loop{ID: id, Prompt: prompt, Status: baton.LoopStatus(status), Iteration: 1, MaxIterations: 5,
				CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Notes: "\n"}
			return loops.encode(l)
		}
		if err := os.WriteFile(outside, encode(ids[0], "active", "p-z"), 0o644); err != nil {
			t.Fatal(err)
		}
		// inPlace rewrites a file where it is, at the same size, and sets
		// its time back: only its change time tells.
		inPlace := func(path string, edit func([]byte) []byte) {
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() {
				return
			}
			b, _ := os.ReadFile(path)
			nb := edit(b)
			if len(nb) != len(b) {
				t.Fatalf("edit changed the size")
			}
			if err := os.WriteFile(path, nb, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
		// The scan: every file read, each foreign version told once.
		type version struct {
			active string
			told   bool
		}
		model := map[string]version{}
		scan := func(fg Foreground) []string {
			var told []string
			for _, id := range ids {
				fi, err := os.Lstat(loops.path(s, id))
				if err != nil || !fi.Mode().IsRegular() {
					delete(model, id)
					continue
				}
				l, err := s.FindLoopByID(id)
				if err != nil {
					delete(model, id)
					continue
				}
				v := version{}
				if l.Status == baton.LoopActive {
					v.active = LoopDigest(l)
				}
				v.told = v.active != "" && !fg.Trusts(l)
				if was := model[id]; v.told && !(was.told && was.active == v.active) {
					told = append(told, id)
				}
				model[id] = v
			}
			return told
		}
		for i := 0; i+1 < len(ops); i += 2 {
			k := int(ops[i+1]) % len(ids)
			id, path := ids[k], loops.path(s, ids[k])
			switch ops[i] % 10 {
			case 0: // baton starts the loop: created and adopted
				if _, err := os.Lstat(path); err == nil {
					break
				}
				l := &baton.Loop{ID: id, Prompt: "p-a", MaxIterations: 5}
				if err := s.CreateLoop(ctx, l); err != nil {
					t.Fatal(err)
				}
				if _, err := s.AdoptLoop(ctx, fmt.Sprint("s", k), l); err != nil {
					t.Fatal(err)
				}
			case 1: // a checkout brings a new version (temp file, rename)
				tmp := path + ".new"
				if err := os.WriteFile(tmp, encode(id, "active", fmt.Sprintf("p-%c", 'a'+ops[i+1]%3)), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			case 2: // an editor pauses or resumes it in place
				inPlace(path, func(b []byte) []byte {
					if bytes.Contains(b, []byte("status: active")) {
						return bytes.Replace(b, []byte("status: active"), []byte("status: paused"), 1)
					}
					return bytes.Replace(b, []byte("status: paused"), []byte("status: active"), 1)
				})
			case 3: // an editor changes the prompt in place, same size
				inPlace(path, func(b []byte) []byte {
					for _, c := range []string{"a", "b", "c"} {
						if i := bytes.Index(b, []byte("p-"+c)); i >= 0 {
							nb := slices.Clone(b)
							nb[i+2] = "bca"[c[0]-'a']
							return nb
						}
					}
					return b
				})
			case 4:
				os.Remove(path)
			case 5: // a link out of the store, to an active loop
				os.Remove(path)
				if err := os.Symlink(outside, path); err != nil {
					t.Fatal(err)
				}
			case 6: // the user adopts it
				if l, err := s.FindLoopByID(id); err == nil {
					if _, err := s.AdoptLoop(ctx, fmt.Sprint("s", k), l); err != nil {
						t.Fatal(err)
					}
				}
			case 7: // git replaces it: unlink, create (perhaps the same inode)
				if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
					b, _ := os.ReadFile(path)
					os.Remove(path)
					if err := os.WriteFile(path, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			case 8: // a stop counts an iteration
				if _, err := s.UpdateLoop(ctx, id, func(l *baton.Loop) error { l.Iteration++; return nil }); err != nil && baton.ErrorCode(err) != baton.NotFound && baton.ErrorCode(err) != baton.Invalid {
					t.Fatal(err)
				}
			case 9:
				// No event marks the file system's clock moving on: wait out
				// the window in which a record is not believed, so that the
				// next calls take the shortcut.
				time.Sleep(25 * time.Millisecond)
			}
			fg, err := s.Foreground()
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := s.NewForeignLoops(fg)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, l := range got {
				gotIDs = append(gotIDs, l.ID)
			}
			if want := scan(fg); !slices.Equal(gotIDs, want) {
				t.Fatalf("after op %d (%d on loop %d): NewForeignLoops told %v, a scan of every file tells %v", i/2, ops[i]%10, k, gotIDs, want)
			}
		}
	})
}

// The record lives in the per-machine directory, where anything with the
// user's rights can put something else: a named pipe, a link out, a file
// over the bound, garbage. NewForeignLoops answers at once as if there
// were no record (the foreign loop is told), and leaves a regular file.
func TestLoopsSeenHostileRecord(t *testing.T) {
	t.Parallel()
	plants := map[string]func(p string) error{
		"a named pipe":        func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"a link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"a file over the bound": func(p string) error {
			return os.WriteFile(p, append([]byte(seenHeader), make([]byte, maxIndexBytes)...), 0o644)
		},
		"garbage": func(p string) error {
			return os.WriteFile(p, []byte(seenHeader+"x y z\n\x00\xff 1 2 3 4 - 1\n"), 0o644)
		},
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := Open(t.TempDir(), Options{})
			if _, err := s.Init(context.Background()); err != nil {
				t.Fatal(err)
			}
			id := "20260101T000000Z-brought"
			l := &baton.Loop{ID: id, Prompt: "p", Status: baton.LoopActive, Iteration: 1, MaxIterations: 5,
				CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Notes: "\n"}
			if err := os.MkdirAll(s.path(LoopsDir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(loops.path(s, id), loops.encode(l), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.mkIndexes(); err != nil {
				t.Fatal(err)
			}
			p := s.indexPath(LoopsSeenFile)
			if err := plant(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan []*baton.Loop, 1)
			go func() {
				fg, err := s.Foreground()
				if err != nil {
					t.Error(err)
				}
				told, _, err := s.NewForeignLoops(fg)
				if err != nil {
					t.Error(err)
				}
				done <- told
			}()
			select {
			case told := <-done:
				if len(told) != 1 || told[0].ID != id {
					t.Errorf("with %s as the record, NewForeignLoops told %v; want %s", name, told, id)
				}
			case <-time.After(20 * time.Second):
				if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil { // unblock the open
					defer f.Close()
				}
				t.Fatalf("NewForeignLoops waited on %s", name)
			}
			if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<10 {
				t.Errorf("the record after %s: %v, %v; want a small regular file", name, fi, err)
			}
		})
	}
}
