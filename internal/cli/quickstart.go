package cli

import (
	"bytes"
	"context"
	"encoding/json"
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
the store, answer Claude Code hook payloads (session start, a file edit, two
stops of a loop), write a handoff packet the way an agent would, and pick it
up as the next session's prompt.

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

	payload := func(fields string) string {
		return `{"session_id":"quickstart-session","cwd":` + jsonString(dir) + `,` + fields + `}`
	}
	steps := []struct {
		note  string
		stdin string
		args  []string
		env   map[string]string
	}{
		{note: "Create the context store at the git root.", args: []string{"init"}},
		{note: "Claude Code starts a session: the session-start hook records it and prints the context to inject.",
			stdin: payload(`"hook_event_name":"SessionStart","source":"startup"`),
			args:  []string{"hook", "session-start", "--harness", "claude"}},
		{note: "The agent edits greet.go: the post-tool-use hook records the file (it prints nothing and never blocks).",
			stdin: payload(`"hook_event_name":"PostToolUse","tool_name":"Edit","tool_input":{"file_path":` + jsonString(filepath.Join(dir, "greet.go")) + `,"old_string":"a","new_string":"b"}`),
			args:  []string{"hook", "post-tool-use", "--harness", "claude"}},
		{note: "The files agents touched, ranked.", args: []string{"files"}},
		{note: "The user starts a loop: the prompt repeats at every stop until the agent states a promise.",
			args: []string{"loop", "start", "--max-iterations", "5", "--promise", "DONE", "--promise", "BLOCKED", "Make the greeting configurable; run go test ./... each round."},
			env:  map[string]string{"BATON_SESSION_ID": "quickstart-session", "BATON_HARNESS": "claude"}},
		{note: "The agent tries to stop without a promise: the stop hook blocks and feeds the loop prompt back.",
			stdin: payload(`"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"I added the env lookup."`),
			args:  []string{"hook", "stop", "--harness", "claude"}},
		{note: "The agent states a promise: the loop ends as done with that outcome, and the stop is allowed.",
			stdin: payload(`"hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"Tests pass. <promise>DONE</promise>"`),
			args:  []string{"hook", "stop", "--harness", "claude"}},
		{note: "The loop is kept, with its outcome.", args: []string{"loop", "list"}},
		{note: "At the end of the session the agent writes a handoff packet and pipes it in.",
			stdin: quickstartBody,
			args:  []string{"handoff", "make the greeting configurable", "--body", "-", "--validator", "go test ./..."},
			env:   map[string]string{"BATON_SESSION_ID": "quickstart-session", "BATON_HARNESS": "claude"}},
		{note: "The next session starts from this prompt (checked against the repository as it is now).",
			args: []string{"pickup", "latest", "--explain"}},
	}
	for _, s := range steps {
		say("# %s", s.note)
		shown := "baton " + strings.Join(quoteArgs(s.args), " ")
		switch {
		case strings.HasPrefix(s.stdin, "{"):
			shown = "<hook payload> | " + shown
		case s.stdin != "":
			shown = "<agent-written markdown> | " + shown
		}
		say("$ %s", shown)
		var so, se bytes.Buffer
		env := s.env
		sub := &Factory{
			IO:  IO{In: strings.NewReader(s.stdin), Out: &so, Err: &se},
			Now: f.Now, Getenv: func(k string) string { return env[k] },
			WorkDir: dir, Version: f.Version, Executable: f.Executable,
		}
		code := Main(ctx, s.args, sub)
		out.Write(so.Bytes())
		if so.Len() > 0 && !bytes.HasSuffix(so.Bytes(), []byte("\n")) {
			say("")
		}
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

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
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
