package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

// Static files are embedded, so they change only with the binary: each
// is hashed and gzipped once, on first use. Pages name them with their
// hash (/static/style.css?v=1a2b3c4d5e), which is cached for a year
// (immutable); any other request for them revalidates with the hash as
// ETag. Clients that take gzip get it.

// asset is one static file, ready to serve.
type asset struct {
	name, ctype, hash string
	raw, gz           []byte
}

var (
	assetsOnce sync.Once
	assets     map[string]*asset
)

func loadAssets() map[string]*asset {
	assetsOnce.Do(func() {
		assets = map[string]*asset{}
		sub, _ := fs.Sub(staticFS, "static")
		_ = fs.WalkDir(sub, ".", func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			b, err := fs.ReadFile(sub, p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			a := &asset{name: p, raw: b, hash: hex.EncodeToString(sum[:5]), ctype: mime.TypeByExtension(path.Ext(p))}
			if a.ctype == "" {
				a.ctype = "text/plain; charset=utf-8"
			}
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			_, _ = w.Write(b)
			_ = w.Close()
			if z.Len() < len(b) {
				a.gz = z.Bytes()
			}
			assets[p] = a
			return nil
		})
	})
	return assets
}

// assetURL is the URL pages name a static file by: with its hash.
func assetURL(name string) string {
	if a := loadAssets()[name]; a != nil {
		return "/static/" + name + "?v=" + a.hash
	}
	return "/static/" + name
}

// serveAsset answers a request for the static file name.
func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	a := loadAssets()[name]
	if a == nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	etag := `"` + a.hash + `"`
	h.Set("ETag", etag)
	h.Set("Vary", "Accept-Encoding")
	if r.URL.Query().Get("v") == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache") // revalidate: the ETag answers 304
	}
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.ctype)
	body := a.raw
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// gzipWriters keeps page compressors for reuse: each holds buffers of
// hundreds of KiB.
var gzipWriters = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression); return w }}

// compressPage returns page gzipped, and says so in w's headers, when
// the client takes gzip and the page is worth it. A delivery's page with
// a big diff is hundreds of KiB of markup that compresses tenfold: a
// phone on a slow network waits seconds less for it.
//
// Compressing pages that hold a secret (the CSRF token) beside text a
// request can choose (a search) is what BREACH measures; it needs the
// victim's browser to send the attacker's requests with the session
// cookie, which SameSite=Strict refuses for every request from another
// site.
func compressPage(w http.ResponseWriter, r *http.Request, page []byte) []byte {
	w.Header().Add("Vary", "Accept-Encoding")
	if len(page) < 1024 || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		return page
	}
	var z bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&z)
	_, _ = zw.Write(page)
	_ = zw.Close()
	gzipWriters.Put(zw)
	w.Header().Set("Content-Encoding", "gzip")
	return z.Bytes()
}

// acceptsGzip reads an Accept-Encoding header: gzip listed, and not
// with q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(enc) != "*" {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

func (s *Server) static() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, strings.TrimPrefix(r.URL.Path, "/static/"))
	})
}

// favicon serves the icon at the path browsers ask for by themselves.
func (s *Server) favicon(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, "favicon.svg")
}
