package hook

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/harness"
)

// Main answers one hook as `baton hook <args>` and the companion binary
// `baton-hook <args>` do: args are `<event> --harness <name> [--root
// dir]` (also `--flag=value`). They are parsed by hand, so that no typo
// can become an exit status a harness reads as "block": bad arguments,
// like everything else in a hook, print one line on stderr and exit 0.
// prog names the program for that line. An explicit root comes from
// --root, else rootFallback (baton's global --root, BATON_ROOT).
func Main(ctx context.Context, prog string, args []string, stdin io.Reader, stdout, stderr io.Writer, env Env, rootFallback string) int {
	var event, harnessName, root string
	var bad []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case name == "--harness" || name == "--root":
			if !hasVal {
				if i+1 >= len(args) {
					bad = append(bad, a+" needs a value")
					continue
				}
				i++
				val = args[i]
			}
			if name == "--harness" {
				harnessName = val
			} else {
				root = val
			}
		case strings.HasPrefix(a, "-"):
			bad = append(bad, "unknown flag "+a)
		case event == "":
			event = a
		default:
			bad = append(bad, "unexpected argument "+a)
		}
	}
	failOpen := func(msg string) int {
		fmt.Fprintf(stderr, "%s: %s; the session goes on (see `baton hook --help`)\n", prog, msg)
		return 0
	}
	if len(bad) > 0 {
		return failOpen(strings.Join(bad, ", "))
	}
	h, err := harness.Lookup(harnessName)
	if err != nil {
		return failOpen(fmt.Sprintf("--harness %q is not one of %s", harnessName, strings.Join(harness.Names(), ", ")))
	}
	ev, err := harness.ParseEvent(event)
	if err != nil {
		return failOpen(baton.ErrorMessage(err))
	}
	if root == "" {
		root = rootFallback
	}
	if root == "" {
		root = env.getenv("BATON_ROOT")
	}
	if root != "" && !filepath.IsAbs(root) {
		root = filepath.Join(env.WorkDir, root)
	}
	env.Root, env.Stderr = root, stderr
	return Run(ctx, h, ev, stdin, stdout, env)
}
