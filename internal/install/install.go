// Package install writes baton's hooks and slash commands into each
// agent product's own configuration, and takes out exactly what it put
// in. Hook entries are recognised by their command (`<baton> hook …`),
// command files by a "baton-managed" frontmatter comment, so install is
// idempotent, uninstall leaves other hooks and files alone, and nothing
// needs a separate manifest. Every file it changes is backed up first.
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/safefile"
)

// Scope says where an installation lives.
type Scope string

const (
	ScopeProject Scope = "project" // the project root (settings next to the code)
	ScopeUser    Scope = "user"    // the home directory (every project)
)

// ParseScope returns the scope named s.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeProject, ScopeUser:
		return Scope(s), nil
	}
	return "", baton.Errorf(baton.Invalid, "--scope %q is not project or user", s)
}

// Target is one installation: a harness at a scope.
type Target struct {
	Harness baton.Harness
	Scope   Scope
	Root    string // the project root, for project scope
	Home    string // the user's home directory
	Exe     string // the absolute path of the baton binary to call
	// Getenv reads the environment for the variables that move a
	// harness's user directory ($CODEX_HOME, $PI_CODING_AGENT_DIR; the
	// table's UserDirEnv); nil reads none.
	Getenv func(string) string
	// NoMCP leaves the harness's MCP configuration alone on install
	// (uninstall always takes baton's server out).
	NoMCP bool
}

// userDir is h's user directory (harness.Harness.UserPath).
func (t Target) userDir(h *harness.Harness) string { return h.UserPath(t.Home, t.Getenv) }

// codexHome is Codex's user directory.
func (t Target) codexHome() string { return t.userDir(harness.Codex) }

// piAgentDir is pi's user directory.
func (t Target) piAgentDir() string { return t.userDir(harness.Pi) }

func (t Target) validate() error {
	if !filepath.IsAbs(t.Exe) {
		return baton.Errorf(baton.Invalid, "the baton binary path %q is not absolute", t.Exe)
	}
	if t.Home == "" || !filepath.IsAbs(t.Home) {
		return baton.Errorf(baton.Invalid, "cannot find the home directory: set HOME")
	}
	if t.Scope == ScopeProject && !filepath.IsAbs(t.Root) {
		return baton.Errorf(baton.Invalid, "the project root %q is not absolute", t.Root)
	}
	return nil
}

// base is the directory a harness's files hang off at the target's scope.
func (t Target) base() string {
	if t.Scope == ScopeUser {
		return t.Home
	}
	return t.Root
}

// Action is what a Change does to its file.
type Action string

const (
	Create    Action = "create"
	Update    Action = "update"
	Remove    Action = "remove"
	Unchanged Action = "unchanged"
	Skip      Action = "skip" // a file baton does not own is in the way
)

// Change is one file of a plan. Before is nil when the file does not
// exist; After is nil when it is removed.
type Change struct {
	Path   string `json:"path"`
	Action Action `json:"action"`
	Kind   string `json:"kind"` // hooks, mcp, command, extension
	Note   string `json:"note,omitempty"`
	Before []byte `json:"-"`
	After  []byte `json:"-"`
}

// Plan is what install or uninstall will do.
type Plan struct {
	Target  Target   `json:"-"`
	Changes []Change `json:"changes"`
	// Notes tell the user what to do next (trust hooks in Codex, ...).
	Notes []string `json:"notes"`
}

// Changed reports whether applying p writes anything.
func (p *Plan) Changed() bool {
	for _, c := range p.Changes {
		if c.Action == Create || c.Action == Update || c.Action == Remove {
			return true
		}
	}
	return false
}

// harnessSpec describes one harness's files.
type harnessSpec struct {
	hooksFile  func(t Target) string
	flatHooks  bool // the hooks file is the event map itself (Droid)
	hookEvents []hookEvent
	// sharedHooks: the project's hooks file is meant to be committed, so
	// its hooks call baton from PATH (harness.Command with no binary) rather
	// than this machine's binary path.
	sharedHooks  bool
	commandsDir  func(t Target) string // slash-command files (nil: none)
	dialect      dialect               // of the command files
	skillsDir    func(t Target) string // skills (<dir>/<name>/SKILL.md)
	skillDialect dialect
	// legacyCommandsDir holds command files an earlier baton wrote where
	// skills now replace them: install and uninstall remove baton's.
	legacyCommandsDir func(t Target) string
	extension         func(t Target) string // pi only
	mcp               *mcpSpec
	notes             func(t Target, hooksChanged bool) []string
	// untrusted says what of the harness's own trust keeps what is
	// installed (s) from running; nil when nothing does.
	untrusted func(t Target, s Status) []string
	// pluginTrust says what of the harness's trust may keep baton's
	// enabled plugin from running (nil: nothing).
	pluginTrust func(t Target) []string
}

// hookExe is the binary t's hooks run: none (baton from PATH) in a
// project file meant to be committed, else this binary.
func (t Target) hookExe(sp *harnessSpec) string {
	if sp.sharedHooks && t.Scope == ScopeProject {
		return ""
	}
	return t.Exe
}

// specs holds every harness of internal/harness's table.
var specs = map[baton.Harness]*harnessSpec{
	baton.HarnessClaude: &claudeSpec,
	baton.HarnessCodex:  &codexSpec,
	baton.HarnessDroid:  &droidSpec,
	baton.HarnessPi:     &piSpec,
}

func spec(h baton.Harness) (*harnessSpec, error) {
	if _, err := harness.Lookup(string(h)); err != nil {
		return nil, err
	}
	sp, ok := specs[h]
	if !ok {
		return nil, baton.Errorf(baton.Internal, "baton cannot install into %s yet", h)
	}
	return sp, nil
}

// Install plans baton's installation for t. It reads files but writes
// nothing; Apply does.
func Install(t Target) (*Plan, error) { return plan(t, true) }

// Uninstall plans the removal of exactly what Install adds.
func Uninstall(t Target) (*Plan, error) { return plan(t, false) }

func plan(t Target, install bool) (*Plan, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	sp, err := spec(t.Harness)
	if err != nil {
		return nil, err
	}
	p := &Plan{Target: t, Notes: []string{}}
	if install {
		// A settings file baton cannot read here is reported by the
		// hooks plan below, which edits it.
		enabled, _ := PluginEnabled(t)
		if len(enabled) > 0 {
			return pluginPlan(p, sp, enabled), nil
		}
	}
	hooksChanged := false
	if sp.hooksFile != nil {
		c, err := planHooks(sp.hooksFile(t), t.hookExe(sp), t.Harness, sp.hookEvents, install, sp.flatHooks)
		if err != nil {
			return nil, err
		}
		hooksChanged = c.Action != Unchanged
		p.Changes = append(p.Changes, c)
	}
	if install && !t.NoMCP || !install {
		c, ok, err := planMCP(t, install)
		if err != nil {
			return nil, err
		}
		if ok {
			p.Changes = append(p.Changes, c)
		}
	}
	if sp.extension != nil {
		c, err := planManagedFile(sp.extension(t), "extension", renderPiExtension(t), install)
		if err != nil {
			return nil, err
		}
		hooksChanged = c.Action != Unchanged
		p.Changes = append(p.Changes, c)
	}
	if sp.commandsDir != nil {
		cs, err := planCommands(sp.commandsDir(t), t, sp.dialect, install)
		if err != nil {
			return nil, err
		}
		p.Changes = append(p.Changes, cs...)
	}
	if sp.skillsDir != nil {
		d := sp.skillDialect
		d.Skill = true
		cs, err := planCommands(sp.skillsDir(t), t, d, install)
		if err != nil {
			return nil, err
		}
		p.Changes = append(p.Changes, cs...)
	}
	if sp.legacyCommandsDir != nil {
		cs, err := planCommands(sp.legacyCommandsDir(t), t, sp.skillDialect, false)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Action == Remove {
				c.Note = "a skill replaces it"
				p.Changes = append(p.Changes, c)
			}
		}
	}
	if install && sp.notes != nil {
		p.Notes = append(p.Notes, sp.notes(t, hooksChanged)...)
	}
	return p, nil
}

// pluginPlan is install's plan while baton's plugin is enabled for the
// harness: nothing, since the plugin already brings the hooks, skills and
// MCP server, and installed hooks would run beside its own (every hook
// twice, a loop advancing twice per stop).
func pluginPlan(p *Plan, sp *harnessSpec, enabled []string) *Plan {
	t := p.Target
	file := ""
	switch {
	case sp.hooksFile != nil:
		file = sp.hooksFile(t)
	case sp.extension != nil:
		file = sp.extension(t)
	}
	p.Changes = append(p.Changes, Change{Path: file, Action: Skip, Kind: "hooks", Note: "baton's plugin is enabled"})
	h, _ := harness.Lookup(string(t.Harness)) // spec checked it
	p.Notes = append(p.Notes, fmt.Sprintf("baton's %s is enabled for %s (%s): it brings baton's hooks, skills and MCP server, so install changed nothing; installed hooks would run beside the plugin's, twice per event. To use `baton install` instead, %s first.",
		h.Plugin.Noun, t.Harness, strings.Join(enabled, ", "), h.Plugin.Disable))
	if st := Inspect(t); st.Installed {
		p.Notes = append(p.Notes, fmt.Sprintf("baton's hooks from an earlier `baton install %s` are still in %s and run beside the plugin's: run `baton uninstall %s --scope %s`.", t.Harness, st.File, t.Harness, t.Scope))
	}
	return p
}

// Apply carries out p: each settings file that changes is first copied to
// <file>.baton-backup-<UTC time> (-2, -3, ... when that name is taken: a
// backup is never overwritten, so the first one keeps the user's original
// bytes), then written atomically (or removed). A settings file that is a
// symlink (a dotfiles repository) is written through to its target, and
// one only emptied of baton's hooks is then left as an empty object rather
// than removed; a linked file baton wrote whole loses the link only. At
// project scope nothing else is written through a link that leads out
// of the project (inProject). It returns the backups it made.
func Apply(p *Plan, now time.Time) (backups []string, err error) {
	stamp := now.UTC().Format("20060102T150405Z")
	for _, c := range p.Changes {
		if (c.Action == Create || c.Action == Update || c.Action == Remove) && p.Target.Scope == ScopeProject {
			where := c.Path
			if c.Kind == "hooks" || c.Kind == "mcp" {
				// A settings file may itself be a link to the user's
				// dotfiles; the directory it is in may not lead out.
				where = filepath.Dir(c.Path)
			}
			if err := inProject(p.Target.Root, where); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range p.Changes {
		switch c.Action {
		case Create, Update, Remove:
		default:
			continue
		}
		path := c.Path
		linked := false
		settings := c.Kind == "hooks" || c.Kind == "mcp"
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if path, err = filepath.EvalSymlinks(c.Path); err != nil {
				return backups, fmt.Errorf("%s is a link that leads nowhere: %w", c.Path, err)
			}
			linked = true
		}
		// A file removed because it held nothing but baton's hooks holds
		// nothing of the user's to back up.
		if c.Before != nil && settings && c.Action != Remove {
			b, err := backup(c.Path, stamp, c.Before)
			if err != nil {
				return backups, err
			}
			backups = append(backups, b)
		}
		if c.Action == Remove && linked && settings {
			c.After = []byte("{}\n")
		} else if c.Action == Remove {
			// A linked file baton wrote whole (a skill, the pi extension):
			// the link goes, whatever it points at stays.
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return backups, err
			}
			removeEmptyDirs(filepath.Dir(c.Path), p.Target.base())
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return backups, err
		}
		mode := fs.FileMode(0o644)
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := safefile.WriteAtomic(path, c.After, mode); err != nil {
			return backups, err
		}
	}
	return backups, nil
}

// inProject refuses a path that leads out of the project at root through
// a link (a checkout's .claude/skills -> elsewhere): a project's files
// are the checkout's, and a checkout is not trusted to say where baton
// writes. Links that stay inside the project are followed.
func inProject(root, path string) error {
	if rel, err := filepath.Rel(root, path); err != nil || !filepath.IsLocal(rel) {
		return nil // a user-level file a project install also writes (Codex's config)
	}
	top, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	// The deepest part of path that exists, resolved.
	p := path
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if rel, err := filepath.Rel(top, real); err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return baton.Errorf(baton.Conflict, "%s leads out of the project (to %s) through a link: baton writes a project's files only inside it; nothing was changed", path, real)
	}
	return nil
}

// removeEmptyDirs removes dir and its parents while they are empty, up to
// (not including) stop: uninstall leaves no empty .claude/commands/ behind.
func removeEmptyDirs(dir, stop string) {
	stop = filepath.Clean(stop)
	for d := filepath.Clean(dir); d != stop && strings.HasPrefix(d, stop+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return // not empty, or not ours to remove
		}
	}
}

// backup writes data to a new file beside path and returns its name.
func backup(path, stamp string, data []byte) (string, error) {
	for n := 1; n < 1000; n++ {
		b := path + ".baton-backup-" + stamp
		if n > 1 {
			b += "-" + strconv.Itoa(n)
		}
		err := safefile.CreateExclusive(b, data, 0o600)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("too many backups of %s", path)
}

// Describe renders p for people: one line per file, and with diff the
// changes themselves (--dry-run).
func Describe(p *Plan, diff bool) string {
	var b strings.Builder
	changes := append([]Change(nil), p.Changes...)
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Kind == "hooks" && changes[j].Kind != "hooks" })
	for _, c := range changes {
		fmt.Fprintf(&b, "%-9s %s", c.Action, c.Path)
		if c.Note != "" {
			fmt.Fprintf(&b, " (%s)", c.Note)
		}
		b.WriteByte('\n')
		if diff && (c.Action == Create || c.Action == Update || c.Action == Remove) && (c.Kind == "hooks" || c.Kind == "mcp") {
			for _, l := range strings.Split(strings.TrimSuffix(Diff(string(c.Before), string(c.After)), "\n"), "\n") {
				b.WriteString("    " + l + "\n")
			}
		}
	}
	return b.String()
}

// maxSettingsBytes bounds a settings file baton reads.
const maxSettingsBytes = 16 << 20

// readFile returns a file's bytes, or nil when it does not exist. A file
// baton could not write back (read-only) is refused before anything is
// planned.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, baton.Errorf(baton.Conflict, "%s is not a regular file: baton edits only regular files (or links to them)", path)
	}
	if fi.Size() > maxSettingsBytes {
		return nil, baton.Errorf(baton.Conflict, "%s is %d bytes, more than a settings file holds: baton leaves it alone", path, fi.Size())
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return nil, baton.Errorf(baton.Conflict, "%s is read-only (mode %04o): nothing was changed; make it writable (chmod u+w) if baton may edit it", path, fi.Mode().Perm())
	}
	b, err := safefile.ReadFileFollow(path, maxSettingsBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// managedMark is in every file baton writes whole (commands, the pi
// extension); uninstall removes only files that carry it.
const managedMark = "baton-managed"

// planManagedFile plans one file baton owns entirely.
func planManagedFile(path, kind string, content []byte, install bool) (Change, error) {
	before, err := readFile(path)
	if err != nil {
		return Change{}, err
	}
	c := Change{Path: path, Kind: kind, Before: before}
	owned := before != nil && bytes.Contains(before, []byte(managedMark))
	switch {
	case !install && owned:
		c.Action = Remove
	case !install:
		c.Action = Unchanged
		if before != nil {
			c.Note = "not written by baton; left alone"
		}
	case before != nil && !owned:
		c.Action, c.Note = Skip, "exists and was not written by baton; move it away or run `baton migrate factory-commands`"
	case bytes.Equal(before, content):
		c.Action, c.After = Unchanged, content
	case before == nil:
		c.Action, c.After = Create, content
	default:
		c.Action, c.After = Update, content
	}
	return c, nil
}
