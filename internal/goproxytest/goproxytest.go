// Package goproxytest serves Go modules over the module proxy protocol
// (GOPROXY=http://127.0.0.1:port) from an httptest server: a registry
// on this machine for the tests and benchmarks of a delivery's set-up,
// which must download dependencies on an offline machine and show what
// a cache saves.
package goproxytest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Module is one version of a module: its path, version and files (the
// go.mod among them), by path relative to the module's root.
type Module struct {
	Path, Version string
	Files         map[string]string
}

// Server is a running module proxy.
type Server struct {
	// URL is the proxy's address, for GOPROXY.
	URL string
	// Host is its host:port, for an allowlist.
	Host      string
	mods      map[string]served // by "path@version"
	downloads atomic.Int64
}

type served struct {
	mod  Module
	zip  []byte
	sums [2]string // the go.sum lines: zip, go.mod
}

// New starts a proxy serving mods until the test ends.
func New(t testing.TB, mods ...Module) *Server {
	t.Helper()
	s := &Server{mods: map[string]served{}}
	for _, m := range mods {
		z, err := moduleZip(m)
		if err != nil {
			t.Fatal(err)
		}
		s.mods[m.Path+"@"+m.Version] = served{mod: m, zip: z, sums: [2]string{
			fmt.Sprintf("%s %s %s", m.Path, m.Version, hash1(m.Path+"@"+m.Version+"/", m.Files)),
			fmt.Sprintf("%s %s/go.mod %s", m.Path, m.Version, hash1("", map[string]string{"go.mod": m.Files["go.mod"]})),
		}}
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.Host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// GoSum is the go.sum lines of every module served.
func (s *Server) GoSum() string {
	var lines []string
	for _, m := range s.mods {
		lines = append(lines, m.sums[0], m.sums[1])
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// Downloads counts the module zips served.
func (s *Server) Downloads() int64 { return s.downloads.Load() }

// serve answers /<module>/@v/list, .info, .mod and .zip. Module paths
// here are lower case, so they need no case escaping.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path, file, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/@v/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if file == "list" {
		for _, m := range s.mods {
			if m.mod.Path == path {
				fmt.Fprintln(w, m.mod.Version)
			}
		}
		return
	}
	dot := strings.LastIndex(file, ".")
	if dot < 0 {
		http.NotFound(w, r)
		return
	}
	m, ok := s.mods[path+"@"+file[:dot]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch file[dot:] {
	case ".info":
		fmt.Fprintf(w, `{"Version":%q,"Time":"2026-01-02T15:04:05Z"}`, m.mod.Version)
	case ".mod":
		fmt.Fprint(w, m.mod.Files["go.mod"])
	case ".zip":
		s.downloads.Add(1)
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(m.zip)
	default:
		http.NotFound(w, r)
	}
}

// moduleZip is m's zip as the proxy protocol has it: every file under
// path@version/.
func moduleZip(m Module) ([]byte, error) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range sortedNames(m.Files) {
		f, err := zw.Create(m.Path + "@" + m.Version + "/" + name)
		if err != nil {
			return nil, err
		}
		if _, err := f.Write([]byte(m.Files[name])); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// hash1 is Go's "h1:" hash of files named prefix+name: the SHA-256 of
// the sorted lines "<sha256 hex>  <name>\n".
func hash1(prefix string, files map[string]string) string {
	h := sha256.New()
	for _, name := range sortedNames(files) {
		fmt.Fprintf(h, "%x  %s\n", sha256.Sum256([]byte(files[name])), prefix+name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func sortedNames(files map[string]string) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Dependency is a module a test's repository depends on: package dep
// with Answer() returning 42, and filler files (n of them, of size
// bytes each) that make its download and extraction cost what a real
// dependency's does.
func Dependency(path string, n, size int) Module {
	files := map[string]string{
		"go.mod": "module " + path + "\n\ngo 1.21\n",
		"dep.go": "// Package dep is a dependency a set-up installs.\npackage dep\n\n// Answer is what the repository's test checks.\nfunc Answer() int { return 42 }\n",
	}
	line := strings.Repeat("// filler of a module as large as real dependencies are.\n", max(1, size/57))
	for i := range n {
		files[fmt.Sprintf("filler/f%04d.go", i)] = fmt.Sprintf("// Package filler is data.\npackage filler\n\n%s", line)
	}
	return Module{Path: path, Version: "v1.0.0", Files: files}
}
