package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
)

func newQuickstartCmd(f *Factory) *cobra.Command {
	var dir string
	var keep bool
	cmd := &cobra.Command{
		Use:   "quickstart",
		Short: "Walk through baton on a throwaway repository",
		Long: `Create a small git repository in a temporary directory and run baton's
everyday commands against it, printing each command and its output: create
the store, record the files an agent touched, write a handoff packet the way
an agent would, and pick it up as the next session's prompt.

Nothing outside the temporary directory is touched. --keep leaves it for
you to explore; --dir uses a directory you choose (it must be empty or
missing).`,
		Example: "  baton quickstart\n  baton quickstart --keep",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQuickstart(cmd.Context(), f, dir, keep)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "run in `DIR` (empty or missing) instead of a temporary directory")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the directory afterwards")
	return cmd
}

// quickstartBody is the packet an agent would write at the end of a session.
const quickstartBody = `## Intent
Make the greeting configurable without breaking the CLI.

## Decisions
- Read the name from GREETING_NAME; default to "world".

## Relevant Files
### Confirmed
- ` + "`greet.go`" + `

## Next Prompt
Add a test for the GREETING_NAME default in greet_test.go, then run the validators.

## Open Questions
- Should an empty GREETING_NAME mean "world" too?
`

func runQuickstart(ctx context.Context, f *Factory, dir string, keep bool) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "baton-quickstart-")
		if err != nil {
			return err
		}
		dir = d
	} else {
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return usageError("--dir %s is not empty", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	out := f.IO.Out
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	say("baton quickstart in %s\n", dir)

	// A tiny project with one commit.
	files := map[string]string{
		"go.mod":   "module example.com/greet\n\ngo 1.22\n",
		"greet.go": "package greet\n\n// Hello greets the world.\nfunc Hello() string { return \"hello, world\" }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=baton", "-c", "user.email=quickstart@baton.invalid", "commit", "-q", "-m", "greet: first version"},
	} {
		c := exec.CommandContext(ctx, "git", args...)
		c.Dir = dir
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	// The agent edits a file (uncommitted work the packet will record).
	if err := os.WriteFile(filepath.Join(dir, "greet.go"), []byte(files["greet.go"]+"\n// TODO: read GREETING_NAME\n"), 0o644); err != nil {
		return err
	}

	steps := []struct {
		note  string
		stdin string
		args  []string
	}{
		{"Create the context store at the git root.", "", []string{"init"}},
		{"Record the files the agent changed (the post-tool-use hook does this on every edit).", "", []string{"files", "add", "greet.go"}},
		{"At the end of the session the agent writes a handoff packet and pipes it in.", quickstartBody, []string{"handoff", "make the greeting configurable", "--body", "-", "--validator", "go test ./..."}},
		{"The packets in this project.", "", []string{"packet", "list"}},
		{"The next session starts from this prompt (what changed since the handoff is checked against the repository).", "", []string{"pickup", "latest", "--explain"}},
	}
	for _, s := range steps {
		say("# %s", s.note)
		shown := "baton " + strings.Join(quoteArgs(s.args), " ")
		if s.stdin != "" {
			shown = "<agent-written markdown> | " + shown
		}
		say("$ %s", shown)
		var so, se bytes.Buffer
		sub := &Factory{
			IO:  IO{In: strings.NewReader(s.stdin), Out: &so, Err: &se},
			Now: f.Now, Getenv: func(string) string { return "" },
			WorkDir: dir, Version: f.Version, Executable: f.Executable,
		}
		code := Main(ctx, s.args, sub)
		out.Write(so.Bytes())
		out.Write(bytes.ReplaceAll(se.Bytes(), []byte("baton: "), []byte("  (stderr) ")))
		if code != 0 {
			return baton.Errorf(baton.Internal, "quickstart step %q exited %d", shown, code)
		}
		say("")
	}
	if keep {
		say("The repository is in %s; try: cd %s && baton pickup --help", dir, dir)
	} else {
		say("Done. Run it again with --keep to explore the files it made.")
	}
	return nil
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \"'$") {
			a = "\"" + a + "\""
		}
		out[i] = a
	}
	return out
}
