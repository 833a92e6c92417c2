package agentrun_test

import (
	"fmt"

	"github.com/baton-agent/baton/internal/agentrun"
)

// Command shows the exact command line a run would start, for --dry-run.
// The prompt never appears in it: it goes on stdin.
func ExampleCommand() {
	argv, err := agentrun.Command(agentrun.Spec{
		Agent:        "codex",
		Prompt:       "Fix the failing test.",
		SystemPrompt: "You are the implementer.",
		Dir:          "/work/repo",
		OutputSchema: []byte(`{"type":"object","required":["status"]}`),
		LogDir:       "/work/logs/run-7",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range argv {
		fmt.Println(a)
	}
	// Output:
	// codex
	// exec
	// --json
	// --sandbox
	// workspace-write
	// --skip-git-repo-check
	// -C
	// /work/repo
	// --output-schema
	// /work/logs/run-7/output-schema.json
	// --output-last-message
	// /work/logs/run-7/last-message.txt
	// -
}

// SplitArgs reads the argv of a "command:" agent like a shell would,
// without running one or expanding anything.
func ExampleSplitArgs() {
	args, err := agentrun.SplitArgs(`./agent.sh --model "big one" --dir $HOME`)
	fmt.Printf("%q %v\n", args, err)
	// Output: ["./agent.sh" "--model" "big one" "--dir" "$HOME"] <nil>
}
