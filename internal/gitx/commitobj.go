package gitx

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A commit baton composes from known values (a tree git wrote, parents
// git gave, baton's message) is written in-process, as git commit-tree
// writes it: the same object, byte for byte, for one process less per
// commit. Only what git would do plainly is done here; everything else
// (dates or a time zone of the caller's choosing, a TZ Go reads otherwise
// than git's C library, another encoding, a shared repository, fsync of
// loose objects, a message git would re-encode, SHA-256) goes to git. Unlike git, the tree and the
// parents are not looked up: callers pass what git just gave them.

// signatures is what commit-tree would write as author and committer
// (without the date) for one environment, resolved by git once.
type signatures struct {
	author, committer string
	plain             bool // nothing in git's configuration asks more than a plain commit
}

// sigMemo holds signatures per environment and configuration files' state.
type sigMemo struct {
	mu sync.Mutex
	m  map[string]*signatures
}

// blockingConfig are the settings under which commit-tree does more than
// write a plain commit object.
const blockingConfig = `^(i18n\.commitencoding|core\.fsync.*|core\.sharedrepository|extensions\..*)$`

// writeCommit writes the commit CommitTree would make, when it can tell
// git would make that one plainly; ok is false when git must.
func (r *Repo) writeCommit(ctx context.Context, tree, msg string, parents []string) (sha string, ok bool, err error) {
	if r.Ident == nil || !sha1Name(tree) {
		return "", false, nil
	}
	for i, p := range parents {
		if !sha1Name(p) || slices.Contains(parents[:i], p) {
			return "", false, nil // commit-tree drops a duplicate parent, with a warning
		}
	}
	env := r.environ()
	if _, ok := lookupEnv(env, "GIT_AUTHOR_DATE"); ok {
		return "", false, nil
	}
	if _, ok := lookupEnv(env, "GIT_COMMITTER_DATE"); ok {
		return "", false, nil
	}
	// git takes the date's offset from its own TZ, this process from its.
	tz, set := lookupEnv(env, "TZ")
	if own, ownSet := os.LookupEnv("TZ"); tz != own || set != ownSet || !zoneKnown(tz) {
		return "", false, nil
	}
	objects, ok := lookupEnv(env, "GIT_OBJECT_DIRECTORY")
	if !ok {
		l, err := r.layout()
		if err != nil {
			return "", false, nil
		}
		objects = filepath.Join(l.CommonDir, "objects")
	}
	if !filepath.IsAbs(objects) {
		return "", false, nil
	}
	sig, err := r.signatures(ctx, env)
	if err != nil || !sig.plain {
		return "", false, nil // git says why, or does what is asked
	}
	now := time.Now()
	date := strconv.FormatInt(now.Unix(), 10) + " " + now.Format("-0700")
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	fmt.Fprintf(&b, "author %s %s\ncommitter %s %s\n\n", sig.author, date, sig.committer, date)
	b.WriteString(msg)
	if !utf8.Valid(b.Bytes()) {
		return "", false, nil // git re-encodes what is not UTF-8
	}
	sha, err = writeLoose(objects, "commit", b.Bytes())
	return sha, err == nil, err
}

// zones remembers whether Go reads a TZ value as the C library does.
var zones sync.Map // TZ value → bool

// zoneKnown reports whether tz (a TZ value; "" for none or empty) names a
// zone Go loads from the zone database, as the C library git uses does. A
// POSIX rule ("EST5EDT,M3.2.0,M11.1.0") the C library reads and Go takes
// for UTC is not.
func zoneKnown(tz string) bool {
	if tz == "" {
		return true
	}
	if ok, found := zones.Load(tz); found {
		return ok.(bool)
	}
	_, err := time.LoadLocation(strings.TrimPrefix(tz, ":"))
	zones.Store(tz, err == nil)
	return err == nil
}

// sha1Name reports whether s is a full SHA-1 object name as git prints it.
func sha1Name(s string) bool { return len(s) == 40 && isHex(s) }

// lookupEnv finds key in env as a started process sees it: the last
// value wins (os/exec keeps the last of duplicates).
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// signatures returns the author and committer git would write in r with
// env, asked of git (git var, which resolves them as commit-tree does,
// from the environment and the configuration) once per environment and
// state of the configuration files.
func (r *Repo) signatures(ctx context.Context, env []string) (*signatures, error) {
	key := r.sigKey(env)
	m := &r.Ident.sigs
	m.mu.Lock()
	s, ok := m.m[key]
	m.mu.Unlock()
	if ok {
		return s, nil
	}
	id := r.identity(ctx)
	s = &signatures{}
	for _, v := range []struct {
		name string
		to   *string
	}{{"GIT_AUTHOR_IDENT", &s.author}, {"GIT_COMMITTER_IDENT", &s.committer}} {
		out, err := r.line(ctx, append(slices.Clip(id), "var", v.name)...)
		if err != nil {
			return nil, err
		}
		i := strings.LastIndexByte(out, '>')
		if i < 0 {
			return nil, fmt.Errorf("git var %s printed %q, not an identity", v.name, out)
		}
		*v.to = out[:i+1]
	}
	out, err := r.Run(ctx, "config", "--get-regexp", blockingConfig)
	switch {
	case exitCode(err) == 1 && out == "": // none set
		s.plain = true
	case err != nil:
		return nil, err
	}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= 64 {
		m.m = map[string]*signatures{}
	}
	m.m[key] = s
	m.mu.Unlock()
	return s, nil
}

// sigKey names what the signatures depend on: the environment (but the
// object and index files of one commit) and the configuration files,
// each with its size and time of change, so an edited ~/.gitconfig is
// read again. (A file one of them includes is not looked at.)
func (r *Repo) sigKey(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_WORK_TREE", "PWD":
			continue
		}
		b.WriteString(kv)
		b.WriteByte(0)
	}
	files := []string{"/etc/gitconfig"}
	if v, ok := lookupEnv(env, "GIT_CONFIG_SYSTEM"); ok {
		files[0] = v
	}
	home, _ := lookupEnv(env, "HOME")
	xdg, ok := lookupEnv(env, "XDG_CONFIG_HOME")
	if !ok && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config"))
	if v, ok := lookupEnv(env, "GIT_CONFIG_GLOBAL"); ok {
		files = append(files, v)
	}
	if l, err := r.layout(); err == nil {
		files = append(files, filepath.Join(l.CommonDir, "config"), filepath.Join(l.GitDir, "config.worktree"))
	} else {
		files = append(files, filepath.Join(r.Dir, "config"), filepath.Join(r.Dir, ".git", "config"))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "%s\x00", f)
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d %d\x00", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// writeLoose writes an object of type typ with content into the object
// directory objects as git writes a loose object (core.fsync and
// core.sharedRepository unset): compressed into a temporary file in its
// fan-out directory, made read-only and linked into place, never
// replacing one that is there (which git only freshens). It returns the
// object's name.
func writeLoose(objects, typ string, content []byte) (string, error) {
	h := sha1.New()
	header := typ + " " + strconv.Itoa(len(content)) + "\x00"
	h.Write([]byte(header))
	h.Write(content)
	name := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(objects, name[:2])
	final := filepath.Join(dir, name[2:])
	if _, err := os.Lstat(final); err == nil {
		now := time.Now()
		_ = os.Chtimes(final, now, now) // as git freshens an object it would have written
		return name, nil
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	if errors.Is(err, fs.ErrNotExist) { // the fan-out directory's first object
		if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		tmp, err = os.CreateTemp(dir, "tmp_obj_")
	}
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	zw := deflaters.Get().(*zlib.Writer) // git's core.looseCompression: the fastest
	defer deflaters.Put(zw)
	zw.Reset(tmp)
	_, err = zw.Write([]byte(header))
	if err == nil {
		_, err = zw.Write(content)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err != nil {
		return "", err
	}
	if err := os.Link(tmp.Name(), final); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return name, nil
}
