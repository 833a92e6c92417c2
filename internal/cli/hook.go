package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/hook"
)

func newHookCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "hook <session-start|stop|post-tool-use|pre-compact> --harness " + strings.Join(harness.Names(), "|"),
		Short: "Answer a harness hook (run by Claude Code, Codex, Droid or pi, not by people)",
		Long: `Read a hook payload (JSON) on stdin, act on the context store, and answer in
the harness's own contract. Installed by "baton install"; see docs/hooks.md.

  session-start   record the session in this machine's session log and print the
                  context to inject: the packet being continued (purpose, Next
                  Prompt), the foreground loop and its iteration, the number of
                  suggested files. Claude Code, Droid: also exports
                  BATON_SESSION_ID through $CLAUDE_ENV_FILE.
  stop            the loop engine: continue the foreground loop (block the stop
                  with the loop prompt) until a <promise> or the iteration limit.
  post-tool-use   record the files a file-changing tool touched.
  pre-compact     write a draft packet so compaction loses nothing.

The project root comes from --root or BATON_ROOT, else the payload's cwd,
else the harness's project directory (CLAUDE_PROJECT_DIR,
FACTORY_PROJECT_DIR): the nearest .agent/context/root.json, else the git root.

A hook never breaks the session: a payload that is not JSON, a payload over
16 MiB, a missing store or any internal error prints one line on stderr and
exits 0. It always exits 0; a Stop is continued only by the JSON decision.
Flags are parsed by hand so that a typo can never turn into exit code 2, which
Claude Code reads as "block".`,
		Example: `  echo '{"session_id":"s1","cwd":"'"$PWD"'","source":"startup"}' | baton hook session-start --harness claude
  echo '{"session_id":"s1","cwd":"'"$PWD"'","last_assistant_message":"<promise>DONE</promise>"}' | baton hook stop --harness=codex`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "-h" || a == "--help" {
					return cmd.Help()
				}
			}
			if code := runHook(cmd.Context(), f, args); code != 0 {
				return &ExitCodeError{Code: code}
			}
			return nil
		},
	}
}

// isHookInvocation reports whether args run a hook (and not its help), so
// Main can answer without building the command tree.
func isHookInvocation(args []string) bool {
	if len(args) == 0 || args[0] != "hook" {
		return false
	}
	for _, a := range args[1:] {
		if a == "-h" || a == "--help" {
			return false
		}
	}
	return true
}

// runHook answers a hook through hook.Main, which the companion binary
// baton-hook runs too.
func runHook(ctx context.Context, f *Factory, args []string) int {
	return hook.Main(ctx, "baton hook", args, f.IO.In, f.IO.Out, f.IO.Err,
		hook.Env{Getenv: f.Getenv, Now: f.Now, WorkDir: f.WorkDir}, f.rootFlag)
}
