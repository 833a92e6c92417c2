package cli

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/install"
)

type installOptions struct {
	scope  string
	dryRun bool
	asJSON bool
	noMCP  bool
}

func newInstallCmd(f *Factory) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "install <claude|codex|droid|pi>",
		Short: "Install baton's hooks, skills and MCP server into an agent product",
		Long: `Write baton's hooks, skills and slash commands into the harness's own
configuration, merged with what is there: other hooks and settings are kept in
order, running it again changes nothing, and every file it changes is first
copied to <file>.baton-backup-<time>. Hooks in files that stay on this machine
call this baton binary by its absolute path; hooks in a project's files meant
to be committed (.codex/hooks.json, .factory/hooks.json) call baton from PATH
through a fail-open shim that prefers baton-hook.

Most users install baton's plugin instead (one line per harness; see
docs/hooks.md). While the plugin (pi: its package) is enabled, install changes
nothing and says so, so hooks never run twice.

  claude  hooks in .claude/settings.local.json (project) or ~/.claude/settings.json
          (user); skills in .claude/skills/ or ~/.claude/skills/
  codex   hooks in .codex/hooks.json or $CODEX_HOME/hooks.json; skills in
          .agents/skills/ or $CODEX_HOME/skills/ ($handoff ...), and prompts in
          $CODEX_HOME/prompts/ for older Codex. Trust the project and the hooks
          (/hooks); baton doctor checks both.
  droid   hooks in .factory/hooks.json or ~/.factory/hooks.json; skills in
          .factory/skills/ and commands in .factory/commands/ (or under ~/.factory/)
  pi      the extension .pi/extensions/baton/index.ts, prompt templates in
          .pi/prompts/, skills in .pi/skills/ (or under ~/.pi/agent/); pi loads
          a project's .pi/ only once you trust the project (baton doctor checks)

It also registers baton's MCP server ("baton mcp"; see docs/mcp.md) unless
--no-mcp: in .mcp.json (claude project; calls baton from PATH) or
~/.claude.json (claude user), [mcp_servers.baton] in $CODEX_HOME/config.toml
(codex, either scope), .factory/mcp.json or ~/.factory/mcp.json (droid),
.pi/mcp.json or ~/.pi/agent/mcp.json (pi 0.99 and later).

Skills: handoff, pickup, baton-loop, baton-cancel, baton-status, review-pr,
fix-issue, implement-feature, and baton (the workflow, for the model). A file
of the same name that baton did not write is left alone and reported.
--dry-run prints the plan and the hook file diffs and writes nothing. See
docs/hooks.md.`,
		Example: `  baton install claude
  baton install codex --scope user --dry-run
  baton install droid --json`,
		Args: exactArgs(1, "one harness: claude, codex, droid or pi"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInstall(f, args[0], o, true)
		},
	}
	addInstallFlags(cmd, &o)
	return cmd
}

func newUninstallCmd(f *Factory) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "uninstall <claude|codex|droid|pi>",
		Short: "Remove exactly what baton install added",
		Long: `Remove baton's hooks (the entries whose command runs "baton hook"), its MCP
server entry (named baton, running "baton mcp") and the command files marked
baton-managed, leaving every other hook, setting and
file as it is. A hooks file left with nothing but baton's hooks is removed,
and so are directories left empty. A settings file that still holds the
user's settings is backed up before it changes (<file>.baton-backup-<time>;
backups are never removed). --dry-run shows the plan.`,
		Example: "  baton uninstall claude\n  baton uninstall codex --scope user --dry-run",
		Args:    exactArgs(1, "one harness: claude, codex, droid or pi"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInstall(f, args[0], o, false)
		},
	}
	addInstallFlags(cmd, &o)
	return cmd
}

func addInstallFlags(cmd *cobra.Command, o *installOptions) {
	cmd.Flags().StringVar(&o.scope, "scope", string(install.ScopeProject), "`SCOPE`: project (this project) or user (every project)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan and diffs; write nothing")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the plan as JSON")
	if cmd.Name() == "install" {
		cmd.Flags().BoolVar(&o.noMCP, "no-mcp", false, "do not register baton's MCP server")
	}
}

// installTarget builds the target for a harness and scope.
func (f *Factory) installTarget(name, scope string) (install.Target, error) {
	h, err := harness.Lookup(name)
	if err != nil {
		return install.Target{}, err
	}
	sc, err := install.ParseScope(scope)
	if err != nil {
		return install.Target{}, err
	}
	root, _ := f.projectRoot()
	if f.Executable == "" {
		return install.Target{}, baton.Errorf(baton.Internal, "cannot find the path of the baton binary")
	}
	if isGoRunBinary(f.Executable) {
		return install.Target{}, baton.Errorf(baton.Conflict, "this baton is a temporary build of `go run` (%s), deleted when it exits: hooks pointing at it would break at once. Install baton first (CGO_ENABLED=0 go install ./cmd/baton), then run `baton install %s` with it", f.Executable, name)
	}
	return f.installTargetFor(h.Name, sc, root), nil
}

// installTargetFor is the target for h at sc, with the harnesses' own
// configuration directories as the environment moves them.
func (f *Factory) installTargetFor(h baton.Harness, sc install.Scope, root string) install.Target {
	return install.Target{Harness: h, Scope: sc, Root: root, Home: f.env("HOME"), Exe: f.Executable, Getenv: f.env}
}

func runInstall(f *Factory, harness string, o installOptions, doInstall bool) error {
	t, err := f.installTarget(harness, o.scope)
	if err != nil {
		return err
	}
	t.NoMCP = o.noMCP
	plan := install.Uninstall
	if doInstall {
		plan = install.Install
	}
	p, err := plan(t)
	if err != nil {
		return err
	}
	if doInstall && t.Scope == install.ScopeProject {
		if _, err := exec.LookPath("baton"); err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("The project's commands call `baton` from PATH (they are meant to be committed), and there is no baton on this PATH: add %s to PATH.", filepath.Dir(t.Exe)))
		}
	}
	var backups []string
	if !o.dryRun {
		if backups, err = install.Apply(p, f.now()); err != nil {
			return err
		}
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int              `json:"schema_version"`
			Harness       string           `json:"harness"`
			Scope         string           `json:"scope"`
			DryRun        bool             `json:"dry_run"`
			Binary        string           `json:"binary"`
			Changes       []install.Change `json:"changes"`
			Backups       []string         `json:"backups"`
			Notes         []string         `json:"notes"`
		}{1, string(t.Harness), string(t.Scope), o.dryRun, t.Exe, p.Changes, nonNilStrings(backups), p.Notes})
	}
	verb := map[bool]string{true: "install", false: "uninstall"}[doInstall]
	if o.dryRun {
		fmt.Fprintf(f.IO.Out, "baton %s %s --scope %s (dry run: nothing written)\n", verb, t.Harness, t.Scope)
	} else {
		fmt.Fprintf(f.IO.Out, "baton %s %s --scope %s\n", verb, t.Harness, t.Scope)
	}
	fmt.Fprint(f.IO.Out, install.Describe(p, o.dryRun))
	for _, b := range backups {
		fmt.Fprintf(f.IO.Out, "backup    %s\n", b)
	}
	if !p.Changed() {
		fmt.Fprintln(f.IO.Out, "nothing to change")
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(f.IO.Out, "\n"+strings.Join(p.Notes, "\n"))
	}
	return nil
}

// isGoRunBinary reports whether exe is a binary `go run` built in a
// go-build temporary directory (…/go-build123/b001/exe/baton), which it
// deletes on exit. A binary elsewhere, even under /tmp, is the user's
// choice.
func isGoRunBinary(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) != "exe" {
		return false
	}
	for d := filepath.Dir(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		if strings.HasPrefix(filepath.Base(d), "go-build") {
			return true
		}
	}
	return false
}
