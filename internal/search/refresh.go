package search

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/safefile"
	"github.com/baton-agent/baton/internal/transcript"
)

// Report says what a Refresh did.
type Report struct {
	Indexed     int // packets, loops and transcripts (re)indexed
	Removed     int // gone since the last refresh
	Messages    int // transcript messages added
	Transcripts bool
	// Skipped are files that could not be read (corrupt, refused); they
	// are left out of the index.
	Skipped []string
}

// source is what the index knows of one indexed file.
type source struct {
	kind        Kind
	size, mtime int64
	done        int64
	name        string // transcripts: "<harness> <session id>"
}

// sessionsSource is the sources row of indexes/sessions.jsonl: when it
// has not changed, no session was added.
const sessionsSource = "sessions"

// fullCheckEvery is how often a refresh stats every packet and loop file
// even when the store says nothing changed: baton writes them through a
// rename, which the store sees, but an editor that writes a file in place
// changes neither the directory nor the store's index.
const fullCheckEvery = time.Minute

// storeKey is the meta row holding the store's Changes as the last
// refresh saw them.
const storeKey = "store"

// newestKey starts the meta rows holding, for packets and for loops, the
// newest updated_at (unix seconds) the last listing saw.
const newestKey = "newest "

// recentWindow is how long before the newest artifact of the last listing
// a refresh looks for those written since: a writer stamps updated_at (to
// the second) before its file is in place, and a listing may run between,
// or list a later writer's file first.
const recentWindow = time.Minute

// refreshKind brings the index up to date with the packets (or loops):
// from the head of the store's listing when it can (refreshRecent), else
// from all of it.
func (ix *Index) refreshKind(ctx context.Context, kind Kind, full bool, rep *Report) error {
	var newest int64
	v, err := ix.meta(ctx, newestKey+string(kind))
	if err != nil {
		return err
	}
	done := false
	if _, err := fmt.Sscan(v, &newest); err == nil && !full {
		if newest, done, err = ix.refreshRecent(ctx, kind, newest, rep); err != nil {
			return err
		}
	}
	if !done {
		if newest, err = ix.refreshArtifacts(ctx, kind, full, rep); err != nil {
			return err
		}
	}
	return ix.setMeta(ctx, newestKey+string(kind), fmt.Sprint(newest))
}

// Refresh brings the index up to date with the store: packets and loops
// whose file changed are indexed again, those removed are dropped, and
// with transcripts on, what each session's transcript gained since the
// last refresh is added (a transcript that shrank is indexed again). It
// asks the store what changed (fsstore.Store.Changes): while the packets
// and loops are as the last refresh left them, it lists nothing, but for
// a full check once a minute; then it lists them from the store's index
// (fsstore.Store.PacketStamps) and reads only the files that changed.
func (ix *Index) Refresh(ctx context.Context) (Report, error) {
	var rep Report
	now := ix.now()
	var last int64
	full := false
	if v, err := ix.meta(ctx, "full_check"); err != nil {
		return rep, err
	} else if _, err := fmt.Sscan(v, &last); err != nil || now.Sub(time.Unix(0, last)) >= fullCheckEvery {
		full = true
	}
	// Read before the listing: a change during it shows next time. A
	// change the store cannot rule out yet (the same tick of the file
	// system's clock) is not kept, so the next refresh lists again.
	changes, settled := ix.st.Changes()
	state := ""
	if settled {
		state = changes.String()
	}
	was, err := ix.meta(ctx, storeKey)
	if err != nil {
		return rep, err
	}
	if full || state == "" || was != state {
		for _, kind := range []Kind{KindPacket, KindLoop} {
			if err := ix.refreshKind(ctx, kind, full, &rep); err != nil {
				return rep, err
			}
		}
		if err := ix.setMeta(ctx, storeKey, state); err != nil {
			return rep, err
		}
	}
	if full {
		if err := ix.setMeta(ctx, "full_check", fmt.Sprint(now.UnixNano())); err != nil {
			return rep, err
		}
	}
	if rep.Transcripts, err = ix.Transcripts(ctx); err != nil || !rep.Transcripts {
		return rep, err
	}
	known, err := ix.sources(ctx, KindTranscript, sessionsSource)
	if err != nil {
		return rep, err
	}
	return rep, ix.refreshTranscripts(ctx, known, &rep)
}

// ForceFullCheck makes the next Refresh stat every packet and loop file
// (benchmarks time it).
func (ix *Index) ForceFullCheck() { _ = ix.setMeta(context.Background(), "full_check", "0") }

func (ix *Index) meta(ctx context.Context, key string) (string, error) {
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func (ix *Index) setMeta(ctx context.Context, key, value string) error {
	_, err := ix.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)`, key, value)
	return err
}

// sources reads what the index knows of the sources of the given kinds.
func (ix *Index) sources(ctx context.Context, kinds ...Kind) (map[string]source, error) {
	args := make([]any, len(kinds))
	for i, k := range kinds {
		args[i] = string(k)
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT path, kind, size, mtime, done, name FROM sources WHERE kind IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]source{}
	for rows.Next() {
		var p, kind string
		var s source
		if err := rows.Scan(&p, &kind, &s.size, &s.mtime, &s.done, &s.name); err != nil {
			return nil, err
		}
		s.kind = Kind(kind)
		out[p] = s
	}
	return out, rows.Err()
}

// refreshRecent is refreshArtifacts for a store whose packets (or loops)
// changed since the last listing through writes that set their updated_at,
// as every baton write does: it reads the head of the store's index, the
// artifacts updated since about the newest of the last listing (which it
// returns as it is now), not the whole of it, nor every row the
// search index keeps. It reports false, having changed nothing, when the
// store holds another number of artifacts than the index knows plus the
// new ones among those (one removed, or added with an older time, as by a
// checkout): then the caller lists them all. An artifact replaced by an
// older one in place of one removed waits for the full check, as an edit
// in place does.
func (ix *Index) refreshRecent(ctx context.Context, kind Kind, newest int64, rep *Report) (_ int64, done bool, err error) {
	list := ix.st.PacketStampsSince
	if kind == KindLoop {
		list = ix.st.LoopStampsSince
	}
	stamps, total, warnings, err := list(time.Unix(newest, 0).Add(-recentWindow))
	if err != nil {
		return 0, false, err
	}
	var known int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM sources WHERE kind = ?`, string(kind)).Scan(&known); err != nil {
		return 0, false, err
	}
	if len(stamps) > 0 {
		newest = max(newest, stamps[0].Updated)
	}
	added := 0
	var changed []fsstore.FileStamp
	for _, st := range slices.Backward(stamps) { // oldest first, as refreshArtifacts
		var size, mtime int64
		err := ix.db.QueryRowContext(ctx, `SELECT size, mtime FROM sources WHERE path = ? AND kind = ?`, st.Path, string(kind)).Scan(&size, &mtime)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			added++
		case err != nil:
			return 0, false, err
		case size == st.Size && mtime == st.Mod:
			continue
		}
		fi, err := os.Lstat(st.Path)
		if err != nil || !fi.Mode().IsRegular() {
			return 0, false, nil // gone or refused since the listing: list them all
		}
		st.Size, st.Mod = fi.Size(), fi.ModTime().UnixNano()
		if size == st.Size && mtime == st.Mod {
			continue
		}
		changed = append(changed, st)
	}
	if known+added != total {
		return 0, false, nil
	}
	for _, w := range warnings {
		rep.Skipped = append(rep.Skipped, w.Error())
	}
	return newest, true, ix.apply(ctx, kind, changed, nil, rep)
}

// refreshArtifacts indexes the packets (or loops) whose file is new or
// changed since the last refresh, as the store's index lists them (stat'd
// on a full check), and drops those removed. A file the store cannot read
// is left out, and said in rep.Skipped.
func (ix *Index) refreshArtifacts(ctx context.Context, kind Kind, full bool, rep *Report) (newest int64, err error) {
	list := ix.st.PacketStamps
	if kind == KindLoop {
		list = ix.st.LoopStamps
	}
	stamps, warnings, err := list(full)
	if err != nil {
		return 0, err
	}
	for _, w := range warnings {
		rep.Skipped = append(rep.Skipped, w.Error())
	}
	known, err := ix.sources(ctx, kind)
	if err != nil {
		return 0, err
	}
	if len(stamps) > 0 {
		newest = stamps[0].Updated
	}
	seen := map[string]bool{}
	var changed []fsstore.FileStamp
	// Oldest first: the store lists the newest first, and a query ranks
	// the documents indexed last (maxRanked).
	for _, st := range slices.Backward(stamps) {
		seen[st.Path] = true
		s, ok := known[st.Path]
		if ok && s.size == st.Size && s.mtime == st.Mod {
			continue
		}
		if !full {
			// The store's entry of a file edited in place is stale until
			// its index is rebuilt; the file says what it holds now.
			fi, err := os.Lstat(st.Path)
			if err != nil || !fi.Mode().IsRegular() {
				continue // gone or refused since the listing: the next refresh says
			}
			st.Size, st.Mod = fi.Size(), fi.ModTime().UnixNano()
			if ok && s.size == st.Size && s.mtime == st.Mod {
				continue
			}
		}
		changed = append(changed, st)
	}
	var gone []string
	for p := range known {
		if !seen[p] {
			gone = append(gone, p)
		}
	}
	return newest, ix.apply(ctx, kind, changed, gone, rep)
}

// apply drops the sources gone and indexes the artifacts changed again, in
// one transaction.
func (ix *Index) apply(ctx context.Context, kind Kind, changed []fsstore.FileStamp, gone []string, rep *Report) error {
	if len(changed) == 0 && len(gone) == 0 {
		return nil
	}
	rep.Removed += len(gone)
	return ix.tx(ctx, func(tx *sql.Tx) error {
		for _, p := range gone {
			if err := dropSource(ctx, tx, p); err != nil {
				return err
			}
		}
		ins, insFTS, err := prepareDocs(ctx, tx)
		if err != nil {
			return err
		}
		defer ins.Close()
		defer insFTS.Close()
		for _, c := range changed {
			if err := dropSource(ctx, tx, c.Path); err != nil {
				return err
			}
			docs, err := ix.artifactDocs(kind, c.ID, c.Path)
			if err != nil {
				// Unreadable now: left out until it changes again.
				rep.Skipped = append(rep.Skipped, err.Error())
			}
			for _, d := range docs {
				if err := addDoc(ctx, tx, ins, insFTS, c.Path, d); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO sources(path, kind, size, mtime, done) VALUES (?, ?, ?, ?, 0)`,
				c.Path, string(kind), c.Size, c.Mod); err != nil {
				return err
			}
			rep.Indexed++
		}
		return nil
	})
}

func prepareDocs(ctx context.Context, tx *sql.Tx) (ins, insFTS *sql.Stmt, err error) {
	ins, err = tx.PrepareContext(ctx, `INSERT INTO docs(source, kind, artifact, path, title, body, at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, nil, err
	}
	insFTS, err = tx.PrepareContext(ctx, `INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)`)
	if err != nil {
		ins.Close()
		return nil, nil, err
	}
	return ins, insFTS, nil
}

// artifactDocs are the documents of one packet (its purpose and text) or
// loop (its prompt, and its notes).
func (ix *Index) artifactDocs(kind Kind, id, path string) ([]doc, error) {
	if kind == KindPacket {
		p, err := ix.st.FindPacketByID(id)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if t := strings.TrimSpace(p.Preamble); t != "" {
			b.WriteString(t + "\n\n")
		}
		for _, s := range p.Sections {
			fmt.Fprintf(&b, "%s\n%s\n\n", s.Heading, strings.TrimSpace(s.Body))
		}
		for _, v := range p.Validators {
			b.WriteString(v + "\n")
		}
		for _, f := range append(append([]string(nil), p.RelevantFilesConfirmed...), p.RelevantFilesSuggested...) {
			b.WriteString(f + "\n")
		}
		return []doc{{kind: KindPacket, artifact: p.ID, path: path, title: p.Purpose, body: b.String(), at: p.UpdatedAt}}, nil
	}
	l, err := ix.st.FindLoopByID(id)
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(strings.TrimSpace(l.Prompt), "\n")
	docs := []doc{{kind: KindLoop, artifact: l.ID, path: path, title: baton.Truncate(first, 200, "…"), body: l.Prompt + "\n" + strings.Join(l.Verify, "\n"), at: l.UpdatedAt}}
	if notes := strings.TrimSpace(l.Notes); notes != "" {
		docs = append(docs, doc{kind: KindNote, artifact: l.ID, path: path, title: "Notes of loop " + l.ID, body: notes, at: l.UpdatedAt})
	}
	return docs, nil
}

// maxTranscriptRead bounds what one refresh reads of one transcript; the
// rest waits for the next refresh.
const maxTranscriptRead = 1 << 30

// refreshTranscripts adds the transcripts sessions.jsonl names (when it
// changed) and what each transcript gained since the last refresh.
func (ix *Index) refreshTranscripts(ctx context.Context, known map[string]source, rep *Report) error {
	log := filepath.Join(ix.st.IndexDir(), fsstore.SessionsLog)
	sessions := map[string]baton.SessionRecord{} // by transcript path
	if fi, err := os.Lstat(log); err == nil && fi.Mode().IsRegular() {
		if s, ok := known[sessionsSource]; !ok || s.size != fi.Size() || s.mtime != fi.ModTime().UnixNano() {
			if _, err := safefile.ScanJSONL(log, func(r baton.SessionRecord) error {
				if r.TranscriptPath != "" && filepath.IsAbs(r.TranscriptPath) && strings.HasSuffix(r.TranscriptPath, ".jsonl") {
					sessions[filepath.Clean(r.TranscriptPath)] = r
				}
				return nil
			}); err != nil {
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %v", log, err))
			}
			err := ix.tx(ctx, func(tx *sql.Tx) error {
				for p, r := range sessions {
					if _, ok := known[p]; ok {
						continue
					}
					// New: nothing of it indexed yet. The row keeps the session's
					// name for its documents.
					name := string(r.Harness) + " " + r.SessionID
					if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO sources(path, kind, size, mtime, done, name) VALUES (?, ?, -1, 0, 0, ?)`, p, string(KindTranscript), name); err != nil {
						return err
					}
					known[p] = source{kind: KindTranscript, size: -1, name: name}
				}
				_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO sources(path, kind, size, mtime, done) VALUES (?, 'sessions', ?, ?, 0)`,
					sessionsSource, fi.Size(), fi.ModTime().UnixNano())
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	for p, s := range known {
		if s.kind != KindTranscript {
			continue
		}
		if err := ix.refreshTranscript(ctx, p, s, rep); err != nil {
			return err
		}
	}
	return nil
}

// refreshTranscript indexes what one transcript gained.
func (ix *Index) refreshTranscript(ctx context.Context, path string, s source, rep *Report) error {
	f, err := safefile.OpenRegularFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone: what was indexed of it stays findable
	} else if err != nil {
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %v", path, err))
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == s.size && fi.ModTime().UnixNano() == s.mtime {
		return nil
	}
	harness, sessionID, _ := strings.Cut(s.name, " ")
	if sessionID == "" {
		sessionID = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	return ix.tx(ctx, func(tx *sql.Tx) error {
		from := s.done
		if fi.Size() < from {
			// Rewritten shorter: index it again from the start.
			if _, err := tx.ExecContext(ctx, `INSERT INTO fts(fts, rowid, title, body) SELECT 'delete', rowid, title, body FROM docs WHERE source = ?`, path); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE source = ?`, path); err != nil {
				return err
			}
			from = 0
		}
		ins, insFTS, err := prepareDocs(ctx, tx)
		if err != nil {
			return err
		}
		defer ins.Close()
		defer insFTS.Close()
		title := strings.TrimSpace(harness + " session " + sessionID)
		next, err := transcript.ScanMessages(f, fi.Size(), from, maxTranscriptRead, func(m transcript.Message) error {
			rep.Messages++
			return addDoc(ctx, tx, ins, insFTS, path, doc{kind: KindTranscript, artifact: sessionID, path: path,
				title: title + " (" + m.Role + ")", body: m.Text, at: m.At})
		})
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		size, mtime := fi.Size(), fi.ModTime().UnixNano()
		if next < size {
			size, mtime = -1, 0 // more to read next time
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO sources(path, kind, size, mtime, done, name) VALUES (?, ?, ?, ?, ?, ?)`,
			path, string(KindTranscript), size, mtime, next, s.name)
		rep.Indexed++
		return err
	})
}

// Run is what every edge does for a search: open the store's index,
// bring it up to date, query it, close it.
func Run(ctx context.Context, st *fsstore.Store, q Query) ([]Result, Report, error) {
	if !st.Exists() {
		return nil, Report{}, baton.Errorf(baton.NotFound, "no context store at %s: nothing to search (run `baton init`, or start a session with baton's hooks)", st.Root())
	}
	ix, err := Open(ctx, st)
	if err != nil {
		return nil, Report{}, err
	}
	defer ix.Close()
	rep, err := ix.Refresh(ctx)
	if err != nil {
		return nil, rep, err
	}
	res, err := ix.Search(ctx, q)
	return res, rep, err
}
