package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
	"github.com/baton-agent/baton/internal/install"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/safefile"
)

func newMigrateCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Import state from tools baton replaces (ralph-loop, Factory commands)",
		Long: `Bring over what older setups left behind:

  ralph              the ralph-loop plugin's .claude/ralph-loop.local.md becomes a baton loop
  factory-commands   ~/.factory/commands/handoff.md and pickup.md become baton's commands`,
		Example: "  baton migrate ralph\n  baton migrate factory-commands --dry-run",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMigrateRalphCmd(f), newMigrateFactoryCmd(f))
	return cmd
}

// ralphState is .claude/ralph-loop.local.md's frontmatter.
type ralphState struct {
	Active            *bool  `yaml:"active"`
	Iteration         string `yaml:"iteration"`
	SessionID         string `yaml:"session_id"`
	MaxIterations     string `yaml:"max_iterations"`
	CompletionPromise string `yaml:"completion_promise"`
	StartedAt         string `yaml:"started_at"`
}

func newMigrateRalphCmd(f *Factory) *cobra.Command {
	var file string
	var keep, asJSON bool
	cmd := &cobra.Command{
		Use:   "ralph",
		Short: "Import a ralph-loop state file as a baton loop",
		Long: `Read the ralph-loop plugin's state file (.claude/ralph-loop.local.md in the
project root, or --file) and create a baton loop from it: the prompt
(verbatim, "---" lines included), iteration, max_iterations, the completion
promise and the session. An active ralph loop becomes the foreground loop.
The state file is then renamed to <file>.baton-imported so ralph's own Stop
hook stops continuing it (--keep leaves it in place). Uninstall the plugin
afterwards: two Stop hooks looping the same session fight each other.`,
		Example: "  baton migrate ralph\n  baton migrate ralph --file ../other/.claude/ralph-loop.local.md --keep",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, _ := f.projectRoot()
			if file == "" {
				file = filepath.Join(root, ".claude", "ralph-loop.local.md")
			} else if !filepath.IsAbs(file) {
				file = filepath.Join(f.WorkDir, file)
			}
			l, err := parseRalph(file)
			if err != nil {
				return err
			}
			st, err := f.ensureStore(ctx)
			if err != nil {
				return err
			}
			l.Notes = loop.AppendNote("", f.now().UTC(), "imported from "+file)
			if err := st.CreateLoop(ctx, l); err != nil {
				return err
			}
			if l.Status == baton.LoopActive {
				if _, err := st.AdoptLoop(ctx, l.SessionID, l); err != nil {
					return err
				}
			}
			if !keep {
				if err := os.Rename(file, file+".baton-imported"); err != nil {
					return fmt.Errorf("rename the ralph state file: %w", err)
				}
			}
			if asJSON {
				fg, _ := st.Foreground()
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int `json:"schema_version"`
					loop.View
				}{1, loopView(st, l, fg, true, f.now())})
			}
			fmt.Fprintf(f.IO.Out, "imported %s as loop %s (%s, iteration %s, promises %s)\n", file, l.ID, l.Status, loopProgress(l), dash(strings.Join(l.CompletionPromises, ", ")))
			if !keep {
				fmt.Fprintf(f.IO.Out, "renamed the state file to %s.baton-imported; uninstall the ralph-loop plugin so only baton continues the loop\n", file)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the ralph state `FILE` (default: <root>/.claude/ralph-loop.local.md)")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the ralph state file in place")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the loop as JSON")
	return cmd
}

// parseRalph reads a ralph-loop state file into a loop (not yet stored).
func parseRalph(path string) (*baton.Loop, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, baton.WrapError(baton.NotFound, err, "no ralph-loop state at %s (give --file)", path)
	} else if err != nil {
		return nil, err
	}
	front, body, err := frontmatter.Split(b)
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "%s is not a ralph-loop state file", path)
	}
	var rs ralphState
	if err := yaml.Unmarshal([]byte(front), &rs); err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "%s has unreadable frontmatter", path)
	}
	num := func(field, s string, def int) (int, error) {
		s = strings.Trim(strings.TrimSpace(s), `"'`)
		if s == "" || s == "null" {
			return def, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, baton.Errorf(baton.Invalid, "%s: %s is %q, not a whole number", path, field, s)
		}
		return n, nil
	}
	l := &baton.Loop{Status: baton.LoopActive, SessionID: strings.TrimSpace(rs.SessionID)}
	if rs.Active != nil && !*rs.Active {
		l.Status = baton.LoopPaused
	}
	if l.Iteration, err = num("iteration", rs.Iteration, 1); err != nil {
		return nil, err
	}
	if l.MaxIterations, err = num("max_iterations", rs.MaxIterations, 0); err != nil {
		return nil, err
	}
	if p := strings.TrimSpace(rs.CompletionPromise); p != "" && p != "null" {
		l.CompletionPromises = []string{p}
	}
	if l.SessionID != "" && !baton.ValidID(l.SessionID) {
		l.SessionID = "" // bind on the next stop rather than keep an id baton cannot store
	}
	l.Prompt = strings.TrimSuffix(strings.TrimPrefix(body, "\n"), "\n")
	if strings.TrimSpace(l.Prompt) == "" {
		return nil, baton.Errorf(baton.Invalid, "%s holds no prompt", path)
	}
	return l, nil
}

func newMigrateFactoryCmd(f *Factory) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "factory-commands",
		Short: "Replace ~/.factory/commands/handoff.md and pickup.md with baton's",
		Long: `Turn the Factory Droid commands /handoff and /pickup in ~/.factory/commands/
into baton's, which write and read packets in .agent/context/. Each original
is first copied to <file>.baton-backup-<time>; files that are already
baton's are left as they are.`,
		Example: "  baton migrate factory-commands --dry-run\n  baton migrate factory-commands",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.installTarget("droid", "user")
			if err != nil {
				return err
			}
			stamp := f.now().UTC().Format("20060102T150405Z")
			for _, name := range []string{"handoff", "pickup"} {
				path, content, err := install.CommandFile(t, name)
				if err != nil {
					return err
				}
				old, err := os.ReadFile(path)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					fmt.Fprintf(f.IO.Out, "create    %s\n", path)
				case err != nil:
					return err
				case bytes.Equal(old, content):
					fmt.Fprintf(f.IO.Out, "unchanged %s\n", path)
					continue
				case bytes.Contains(old, []byte("baton-managed")):
					fmt.Fprintf(f.IO.Out, "update    %s\n", path)
				default:
					backup := path + ".baton-backup-" + stamp
					fmt.Fprintf(f.IO.Out, "replace   %s (original kept as %s)\n", path, backup)
					if !dryRun {
						if err := safefile.WriteAtomic(backup, old, 0o644); err != nil {
							return err
						}
					}
				}
				if dryRun {
					continue
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return err
				}
				if err := safefile.WriteAtomic(path, content, 0o644); err != nil {
					return err
				}
			}
			if dryRun {
				fmt.Fprintln(f.IO.Out, "(dry run: nothing written)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change; write nothing")
	return cmd
}
