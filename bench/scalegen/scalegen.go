// Package scalegen makes the project the scale benchmark (bench/scalebench)
// measures: a git repository with many tracked and untracked files, and a
// context store with many packets, loops and a long relevant-files log,
// in the shapes baton itself writes. Making the large one takes minutes,
// so an instance is generated once into a cache directory and reused
// until the generator's Version changes.
package scalegen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
	"github.com/baton-agent/baton/internal/fsstore"
)

// Version names what Generate makes. Change it whenever the output
// changes, so cached instances are made again.
const Version = 3

// Spec is the size of one instance.
type Spec struct {
	Name      string // the cache directory's name: small, large
	Tracked   int    // files committed in the repository
	Untracked int    // files in the work tree that git does not track (nor ignore)
	Packets   int
	Loops     int // the newest is active, unbounded, in the foreground, bound to Session
	LogLines  int // lines of indexes/relevant-files.jsonl
}

// Session is the harness session the foreground loop is bound to: a stop
// hook with this session id blocks.
const Session = "bench-session"

// Small is the 1× store the large one is compared with.
var Small = Spec{Name: "small", Tracked: 100, Untracked: 20, Packets: 10, Loops: 2, LogLines: 1000}

// Large is the monorepo of issues 25 and 35: a thousand times more files
// and packets, a hundred times more loops, and a 500,000-line log.
var Large = Spec{Name: "large", Tracked: 100_000, Untracked: 20_000, Packets: 10_000, Loops: 200, LogLines: 500_000}

// Instance is a generated project in the cache.
type Instance struct {
	Spec Spec
	Dir  string // holds repo/ and store/
}

// Repo is the git work tree the benchmark runs in.
func (in Instance) Repo() string { return filepath.Join(in.Dir, "repo") }

// pristine is the store as generated, copied into the repository by Reset.
func (in Instance) pristine() string { return filepath.Join(in.Dir, "store") }

// stamp is what Cached compares to know an instance is complete and current.
type stamp struct {
	Version int  `json:"version"`
	Spec    Spec `json:"spec"`
}

// Cached returns spec's instance under cacheDir, generating it first when
// it is missing, incomplete or from another Version. logf reports progress.
func Cached(cacheDir string, spec Spec, logf func(string, ...any)) (Instance, error) {
	in := Instance{Spec: spec, Dir: filepath.Join(cacheDir, "scale-"+spec.Name)}
	want, _ := json.Marshal(stamp{Version, spec})
	if got, err := os.ReadFile(filepath.Join(in.Dir, "stamp.json")); err == nil && string(got) == string(want) {
		return in, nil
	}
	logf("generating the %s instance in %s (once; kept until the generator changes)", spec.Name, in.Dir)
	if err := os.RemoveAll(in.Dir); err != nil {
		return in, err
	}
	t0 := time.Now()
	if err := Generate(in.Dir, spec); err != nil {
		return in, err
	}
	logf("generated in %s", time.Since(t0).Round(time.Second))
	return in, os.WriteFile(filepath.Join(in.Dir, "stamp.json"), want, 0o644)
}

// DefaultCacheDir is ${XDG_CACHE_HOME:-~/.cache}/baton-bench.
func DefaultCacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "baton-bench"), nil
}

// pristineMachine is the per-machine directory of the pristine store:
// Reset renames it to the copy's own, since a copy of a store is another
// store to baton (fsstore's machine.go).
const pristineMachine = fsstore.MachineDirPrefix + "pristine"

// Reset puts the pristine store back into the repository, so every run
// starts from the store as generated (runs write packets and log lines),
// with no index: the first baton command builds it. Its per-machine
// state (the logs, the foreground loop) becomes this copy's.
func (in Instance) Reset() error {
	dst := filepath.Join(in.Repo(), fsstore.Dir)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := copyTree(in.pristine(), dst); err != nil {
		return err
	}
	return os.Rename(filepath.Join(dst, fsstore.IndexesDir, pristineMachine), fsstore.Open(in.Repo(), fsstore.Options{}).IndexDir())
}

// Generate writes an instance of spec into dir, which must not exist.
func Generate(dir string, spec Spec) error {
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	paths := trackedPaths(spec.Tracked)
	if err := makeRepo(repo, paths); err != nil {
		return err
	}
	if err := writeUntracked(repo, spec.Untracked); err != nil {
		return err
	}
	store := filepath.Join(dir, "store")
	if err := makeStore(store, spec, paths); err != nil {
		return err
	}
	return nil
}

// trackedPaths spreads n files over services, packages and files, a
// hundred to a directory, as in a monorepo.
func trackedPaths(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("services/svc%03d/pkg%02d/file%03d.go", i/1000, i/100%10, i%100)
	}
	return out
}

// makeRepo commits paths in one commit made by git fast-import (which
// hashes a hundred thousand files in seconds, where git add takes
// minutes), then checks it out.
func makeRepo(repo string, paths []string) error {
	git := func(stdin io.Reader, args ...string) error {
		c := exec.Command("git", args...)
		c.Dir = repo
		c.Stdin = stdin
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@baton.invalid",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@baton.invalid")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := git(nil, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		for i, p := range paths {
			body := fileBody(p)
			fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(body), body)
		}
		when := start.Unix()
		msg := "Import the services"
		fmt.Fprintf(w, "commit refs/heads/main\nauthor bench <bench@baton.invalid> %d +0000\ncommitter bench <bench@baton.invalid> %d +0000\ndata %d\n%s\n", when, when, len(msg), msg)
		for i, p := range paths {
			fmt.Fprintf(w, "M 100644 :%d %s\n", i+1, p)
		}
		w.WriteString("\n")
		pw.CloseWithError(w.Flush())
	}()
	if err := git(pr, "fast-import", "--quiet"); err != nil {
		return err
	}
	return git(nil, "reset", "-q", "--hard", "main")
}

func fileBody(path string) string {
	pkg := filepath.Base(filepath.Dir(path))
	return fmt.Sprintf("package %s\n\n// %s is generated for baton's scale benchmark.\nfunc F() int { return %d }\n", pkg, path, len(path))
}

// writeUntracked spreads n files the repository does not track over its
// directories (new work, build outputs nobody ignored), so a walk for
// untracked files must visit all of them.
func writeUntracked(repo string, n int) error {
	for i := range n {
		p := filepath.Join(repo, fmt.Sprintf("services/svc%03d/pkg%02d/new%03d.txt", i/200%100, i/20%10, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("untracked\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// start is when the generated history begins; a packet follows every hour.
var start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// makeStore writes the store as baton would have: packets and loops
// encoded by baton's own encoder, the relevant-files log and the session
// log in the lines the hooks append. Session i touches a working set of
// about a dozen files near each other, as an agent on one task does, and
// ends with packet i; the log's last session has no packet yet.
func makeStore(dir string, spec Spec, paths []string) error {
	// fsstore makes root.json, the subdirectories and the .gitignore.
	tmpRoot, err := os.MkdirTemp(filepath.Dir(dir), "store-*") // moved into place below
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpRoot)
	st := fsstore.Open(tmpRoot, fsstore.Options{Now: func() time.Time { return start }, NewProjectID: func() string { return "scale-bench" }})
	if _, err := st.Init(context.Background()); err != nil {
		return err
	}
	if err := os.Rename(st.Dir(), dir); err != nil {
		return err
	}

	sessions := spec.Packets + 1
	perSession := spec.LogLines / sessions
	machine := filepath.Join(dir, fsstore.IndexesDir, pristineMachine)
	// Init's per-machine directory moved with the store, named for tmpRoot.
	if err := os.RemoveAll(filepath.Join(dir, fsstore.IndexesDir, filepath.Base(st.IndexDir()))); err != nil {
		return err
	}
	if err := os.MkdirAll(machine, 0o755); err != nil {
		return err
	}
	logf, err := newLineFile(filepath.Join(machine, fsstore.RelevantFilesLog))
	if err != nil {
		return err
	}
	sessf, err := newLineFile(filepath.Join(machine, fsstore.SessionsLog))
	if err != nil {
		return err
	}
	written := 0
	for s := range sessions {
		begin := start.Add(time.Duration(s) * time.Hour)
		work := workingSet(paths, s)
		if err := sessf.json(baton.SessionRecord{SessionID: sessionID(s), Harness: baton.HarnessClaude, Source: "startup", CWD: "/work/repo", At: begin}); err != nil {
			return err
		}
		n := perSession
		if s == sessions-1 {
			n = spec.LogLines - written
		}
		for k := range n {
			// Touches spread over the first 50 minutes of the hour; the
			// packet is written at minute 55. A hook stamps its line with
			// the clock's nanoseconds, so the lines carry fractions.
			at := begin.Add(time.Duration(k)*50*time.Minute/time.Duration(max(n, 1)) + time.Duration(k*7919%1_000_000)*time.Microsecond)
			e := baton.RelevantFile{Timestamp: at, FilePath: work[(k*7)%len(work)], Source: baton.FromTool, Confidence: 0.5}
			if err := logf.json(e); err != nil {
				return err
			}
		}
		written += n
		if s == sessions-1 {
			break
		}
		p := packet(s, begin.Add(55*time.Minute), work, spec.Packets)
		b := frontmatter.EncodePacket(p)
		if err := os.WriteFile(filepath.Join(dir, fsstore.PacketsDir, p.ID+".md"), b, 0o644); err != nil {
			return err
		}
		// handoff records the confirmed files, attached to the packet.
		for _, c := range p.RelevantFilesConfirmed {
			if err := logf.json(baton.RelevantFile{Timestamp: p.CreatedAt, FilePath: c, Source: baton.FromUser, PacketID: p.ID, Confidence: 1}); err != nil {
				return err
			}
		}
	}
	if err := logf.close(); err != nil {
		return err
	}
	if err := sessf.close(); err != nil {
		return err
	}

	var fg *baton.Loop
	for i := range spec.Loops {
		l := loopAt(i, spec.Loops)
		if err := os.WriteFile(filepath.Join(dir, fsstore.LoopsDir, l.ID+".md"), frontmatter.EncodeLoop(l), 0o644); err != nil {
			return err
		}
		fg = l
	}
	if fg != nil {
		// This machine started it: the benchmark session's foreground loop.
		b, _ := json.Marshal(fsstore.Foreground{Sessions: map[string]string{Session: fg.ID}, Adopted: map[string]string{fg.ID: fsstore.LoopDigest(fg)}})
		if err := os.WriteFile(filepath.Join(machine, fsstore.ForegroundLoopsFile), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func sessionID(s int) string { return fmt.Sprintf("sess-%06d", s) }

// workingSet is the dozen files session s works on: most in one package,
// a few shared ones everybody touches.
func workingSet(paths []string, s int) []string {
	base := (s * 7919) % len(paths)
	var out []string
	for k := range 10 {
		out = append(out, paths[(base+k*3)%len(paths)])
	}
	return append(out, paths[0], paths[len(paths)/2])
}

// packet is packet i of n, written at the end of session i: the last
// three are drafts (work to continue), a few are blocked, the rest done.
func packet(i int, at time.Time, work []string, n int) *baton.Packet {
	status := baton.PacketDone
	switch {
	case i >= n-3:
		status = baton.PacketDraft
	case i%97 == 0:
		status = baton.PacketBlocked
	}
	purpose := fmt.Sprintf("Task %d: make %s handle the new request format", i, filepath.Dir(work[0]))
	// Words a search finds in some packets: a tenth name the gateway, a
	// seventh the ledger, a few both.
	var topic []string
	if i%10 == 0 {
		topic = append(topic, "The gateway forwards the new format unchanged.")
	}
	if i%7 == 0 {
		topic = append(topic, "The ledger records each request's format.")
	}
	p := &baton.Packet{
		ID: baton.TimestampID(at, purpose, "packet"), CreatedAt: at, UpdatedAt: at, Status: status, Purpose: purpose,
		Source: string(baton.HarnessClaude), SessionID: sessionID(i), TranscriptPath: "/home/dev/.claude/projects/repo/" + sessionID(i) + ".jsonl",
		RelevantFilesConfirmed: work[:2], RelevantFilesSuggested: work[2:10], Preamble: "\n",
	}
	var files strings.Builder
	files.WriteString("### Confirmed\n\n")
	for _, f := range p.RelevantFilesConfirmed {
		fmt.Fprintf(&files, "- `%s`\n", f)
	}
	files.WriteString("\n### Suggested\n\n")
	for _, f := range p.RelevantFilesSuggested {
		fmt.Fprintf(&files, "- `%s`\n", f)
	}
	text := map[string]string{
		baton.SectionIntent:        purpose + ", so that the clients can move to it before the old one is removed.",
		baton.SectionContext:       strings.Join(append(topic, "The parser accepts both formats; the handlers still assume the old one."), " ") + "\n\n### Repository state (recorded by baton)\n\n- branch: `main`\n- HEAD: `0123456789ab` Import the services\n- uncommitted: 3 files",
		baton.SectionDecisions:     "- Keep the old format readable for one release.\n- Validate at the edge, not in every handler.",
		baton.SectionRelevantFiles: strings.TrimSpace(files.String()),
		baton.SectionNextPrompt:    "Continue with the handlers in " + filepath.Dir(work[0]) + ": switch each to the new request type, run its tests, and note any client that still sends the old format.",
		baton.SectionPlan:          "1. Switch the handlers.\n2. Run the package tests.\n3. Update the changelog.",
		baton.SectionValidators:    "- `go test ./" + filepath.Dir(work[0]) + "/...`",
	}
	for _, h := range baton.PacketSections {
		body := "\n"
		if t := text[h]; t != "" {
			body = "\n" + t + "\n\n"
		}
		p.Sections = append(p.Sections, baton.Section{Heading: h, Body: body})
	}
	last := &p.Sections[len(p.Sections)-1]
	last.Body = strings.TrimSuffix(last.Body, "\n")
	if !strings.HasSuffix(last.Body, "\n") {
		last.Body += "\n"
	}
	return p
}

// loopAt is loop i of n: finished ones, a few cancelled, and the newest
// active, unbounded and bound to Session, so every stop blocks.
func loopAt(i, n int) *baton.Loop {
	at := start.Add(time.Duration(i) * 48 * time.Hour)
	prompt := fmt.Sprintf("Make the test suite of service %d pass; say DONE when it does.", i)
	l := &baton.Loop{
		ID: baton.TimestampID(at, prompt, "loop"), CreatedAt: at, UpdatedAt: at.Add(3 * time.Hour), Status: baton.LoopDone,
		Iteration: 7, MaxIterations: 20, CompletionPromises: []string{"DONE"}, SessionID: sessionID(i), Outcome: "DONE",
		Prompt: prompt, Notes: "\n- " + baton.FormatTime(at.Add(3*time.Hour)) + " promise DONE stated at iteration 7\n",
	}
	switch {
	case i == n-1:
		l.Status, l.Iteration, l.MaxIterations, l.SessionID, l.Outcome, l.UpdatedAt = baton.LoopActive, 1, 0, Session, "", at
		l.Notes = "\n"
	case i%13 == 0:
		l.Status, l.Outcome = baton.LoopCancelled, "cancelled"
	}
	return l
}

// lineFile writes JSON lines through a large buffer.
type lineFile struct {
	f *os.File
	w *bufio.Writer
}

func newLineFile(path string) (*lineFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &lineFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (l *lineFile) json(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.w.Write(b)
	return l.w.WriteByte('\n')
}

func (l *lineFile) close() error {
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return errors.New(p + " is neither a file nor a directory")
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
