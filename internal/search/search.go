// Package search is a full-text index of a project's context: its
// packets, its loops' prompts and notes, and (when the project opts in)
// the session transcripts that indexes/sessions.jsonl names. It is an
// SQLite FTS5 database under .agent/context/indexes/, kept on this
// machine (the store's .gitignore keeps it out of git) and brought up to
// date before each query from what changed since the last one.
//
// The hooks never import this package: it links SQLite.
package search

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	_ "modernc.org/sqlite" // the "sqlite" driver, with FTS5

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// File is the index, in the store's indexes directory.
const File = fsstore.SearchIndex

// Kind is what a result is.
type Kind string

const (
	KindPacket     Kind = "packet"
	KindLoop       Kind = "loop"       // a loop's prompt
	KindNote       Kind = "note"       // a loop's notes
	KindTranscript Kind = "transcript" // a message of a session's transcript
)

// Kinds lists the kinds, for flags and completion.
var Kinds = []Kind{KindPacket, KindLoop, KindNote, KindTranscript}

// ParseKind reads a --kind value.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", baton.Errorf(baton.Invalid, "kind %q is not one of packet, loop, note, transcript", s)
}

// Index is an open search index.
type Index struct {
	st   *fsstore.Store
	db   *sql.DB
	path string
	now  func() time.Time
}

// schemaVersion changes when the tables change; an index of another
// version is rebuilt.
const schemaVersion = "2"

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
	path TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	size INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	done INTEGER NOT NULL, -- transcripts: the offset indexed up to
	name TEXT NOT NULL DEFAULT '' -- transcripts: "<harness> <session id>"
);
CREATE TABLE IF NOT EXISTS docs (
	rowid INTEGER PRIMARY KEY,
	source TEXT NOT NULL,
	kind TEXT NOT NULL,
	artifact TEXT NOT NULL,
	path TEXT NOT NULL,
	title TEXT NOT NULL,
	body TEXT NOT NULL,
	at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_source ON docs(source);
CREATE INDEX IF NOT EXISTS sources_kind ON sources(kind);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, body, content='docs', content_rowid='rowid', tokenize='porter unicode61');
`

// Open opens (creating it if needed) the index of st's store, in the
// store's per-machine directory. The store must exist. Refuse an index
// that is a link: the store follows no links.
func Open(ctx context.Context, st *fsstore.Store) (*Index, error) {
	// This machine's directory of the store: a search.db a checkout
	// carried is never opened (fsstore's machine.go).
	dir, err := st.MakeIndexDir()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, File)
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		if fi, err := os.Lstat(f); err == nil && !fi.Mode().IsRegular() {
			return nil, baton.Errorf(baton.Invalid, "%s is not a regular file (a link?): remove it and search again, which rebuilds the index", f)
		}
	}
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	ix := &Index{st: st, db: db, path: p, now: time.Now}
	if err := ix.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

func (ix *Index) init(ctx context.Context) error {
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&v)
	if err == nil && v == schemaVersion {
		return nil
	}
	if err == nil {
		// Another version: start again.
		for _, t := range []string{"fts", "docs", "sources", "meta"} {
			if _, err := ix.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
				return fmt.Errorf("reset the search index: %w", err)
			}
		}
	}
	if _, err := ix.db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create the search index: %w", err)
	}
	_, err = ix.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)`, schemaVersion)
	return err
}

// Close closes the index.
func (ix *Index) Close() error { return ix.db.Close() }

// Transcripts reports whether the project indexes its session transcripts.
func (ix *Index) Transcripts(ctx context.Context) (bool, error) {
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'transcripts'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return v == "on", err
}

// SetTranscripts turns indexing the session transcripts on or off for
// this project (on this machine, where the transcripts are); off drops
// them from the index.
func (ix *Index) SetTranscripts(ctx context.Context, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	if _, err := ix.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES ('transcripts', ?)`, v); err != nil {
		return err
	}
	if on {
		return nil
	}
	return ix.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT path FROM sources WHERE kind = ?`, string(KindTranscript))
		if err != nil {
			return err
		}
		var paths []string
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return err
			}
			paths = append(paths, p)
		}
		rows.Close()
		for _, p := range paths {
			if err := dropSource(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func (ix *Index) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// dropSource removes every document of a source, and the source.
func dropSource(ctx context.Context, tx *sql.Tx, source string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO fts(fts, rowid, title, body) SELECT 'delete', rowid, title, body FROM docs WHERE source = ?`, source); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE source = ?`, source); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM sources WHERE path = ?`, source)
	return err
}

// doc is one document to index.
type doc struct {
	kind           Kind
	artifact, path string
	title, body    string
	at             time.Time
}

func addDoc(ctx context.Context, tx *sql.Tx, ins, insFTS *sql.Stmt, source string, d doc) error {
	res, err := tx.StmtContext(ctx, ins).ExecContext(ctx, source, string(d.kind), d.artifact, d.path, d.title, d.body, d.at.Unix())
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, insFTS).ExecContext(ctx, id, d.title, d.body)
	return err
}

// Query is a search.
type Query struct {
	// Text is words to find; every word must appear (in any form the
	// stemmer equates: test, tests, testing). When no document has them
	// all, documents with any of them are ranked instead.
	Text  string
	Kinds []Kind // none: every kind
	Limit int    // 0: 20
}

// Result is one hit.
type Result struct {
	Kind     Kind      `json:"kind"`
	ID       string    `json:"id"`   // the packet, loop or session id
	Path     string    `json:"path"` // the file it is in
	Title    string    `json:"title"`
	Snippet  string    `json:"snippet"` // the matching text, words in «»
	At       time.Time `json:"at"`
	Rank     float64   `json:"rank"` // bm25: lower is better
	AnyWords bool      `json:"any_words,omitempty"`
}

// MaxRanked bounds the documents a query ranks: those indexed last, when
// its words are in more (a common word in a large project).
const MaxRanked = 5000

var maxRanked = MaxRanked // tests lower it

// MaxQuery bounds a query's text.
const MaxQuery = 1000

// terms are the query's words, each quoted for FTS5 (no operator in the
// text can change the query's meaning).
func terms(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		out = append(out, `"`+w+`"`)
		if len(out) == 32 {
			break
		}
	}
	return out
}

// Search finds the documents that match q, best first.
func (ix *Index) Search(ctx context.Context, q Query) ([]Result, error) {
	if len(q.Text) > MaxQuery {
		return nil, baton.Errorf(baton.Invalid, "the query is over %d bytes", MaxQuery)
	}
	ts := terms(q.Text)
	if len(ts) == 0 {
		return nil, baton.Errorf(baton.Invalid, "the query has no words to search for")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	res, err := ix.match(ctx, strings.Join(ts, " AND "), q.Kinds, limit)
	if err != nil || len(res) > 0 || len(ts) == 1 {
		return res, err
	}
	res, err = ix.match(ctx, strings.Join(ts, " OR "), q.Kinds, limit)
	for i := range res {
		res[i].AnyWords = true
	}
	return res, err
}

// match ranks the documents expr matches and returns the best limit of
// them. It ranks first and makes snippets after, for those only: a
// snippet costs more than a rank, and a common word matches many.
func (ix *Index) match(ctx context.Context, expr string, kinds []Kind, limit int) ([]Result, error) {
	query := `SELECT fts.rowid, bm25(fts, 4.0, 1.0) AS r FROM fts WHERE fts MATCH ?`
	args := []any{expr}
	if len(kinds) > 0 {
		query = `SELECT fts.rowid, bm25(fts, 4.0, 1.0) AS r FROM fts JOIN docs d ON d.rowid = fts.rowid WHERE fts MATCH ?` +
			` AND d.kind IN (` + strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",") + `)`
		for _, k := range kinds {
			args = append(args, string(k))
		}
	}
	// Ranking costs per matching document: a query whose words are in
	// more than MaxRanked documents ranks the MaxRanked indexed last.
	var cut int64
	err := ix.db.QueryRowContext(ctx, `SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`, expr, maxRanked).Scan(&cut)
	switch {
	case err == nil:
		query += ` AND fts.rowid > ?`
		args = append(args, cut)
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("search: %w", err)
	}
	query += ` ORDER BY r LIMIT ?`
	args = append(args, limit)
	rows, err := ix.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	type hit struct {
		rowid int64
		rank  float64
	}
	var hits []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.rowid, &h.rank); err != nil {
			rows.Close()
			return nil, err
		}
		hits = append(hits, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return []Result{}, nil
	}
	// The hits' fields and snippets in one query, not one each: every
	// query evaluates the match again.
	in := make([]any, 0, len(hits)+1)
	in = append(in, expr)
	for _, h := range hits {
		in = append(in, h.rowid)
	}
	rows, err = ix.db.QueryContext(ctx, `SELECT fts.rowid, d.kind, d.artifact, d.path, d.title, snippet(fts, -1, '«', '»', '…', 16), d.at
		FROM fts JOIN docs d ON d.rowid = fts.rowid WHERE fts MATCH ? AND fts.rowid IN (`+strings.TrimSuffix(strings.Repeat("?,", len(hits)), ",")+`)`, in...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	found := make(map[int64]Result, len(hits))
	for rows.Next() {
		var r Result
		var rowid, at int64
		var kind string
		if err := rows.Scan(&rowid, &kind, &r.ID, &r.Path, &r.Title, &r.Snippet, &at); err != nil {
			rows.Close()
			return nil, err
		}
		r.Kind, r.At = Kind(kind), time.Unix(at, 0).UTC()
		found[rowid] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	out := make([]Result, 0, len(hits))
	for _, h := range hits {
		r, ok := found[h.rowid]
		if !ok {
			continue // removed meanwhile
		}
		r.Rank = h.rank
		out = append(out, r)
	}
	return out, nil
}

// Size is the index's size on disk, its write-ahead log included.
func (ix *Index) Size() int64 {
	var n int64
	for _, f := range []string{ix.path, ix.path + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}
