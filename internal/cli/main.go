package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
)

// Main runs baton with args (without the program name) and returns the
// process exit code. It is the one place that prints a command's error.
func Main(ctx context.Context, args []string, f *Factory) int {
	if isHookInvocation(args) {
		// Hooks answer on every tool call and stop: they skip the command
		// tree and follow the harness's contract instead of the exit table.
		return runHook(ctx, f, args[1:])
	}
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	var ee *ExitCodeError
	if errors.As(err, &ee) && ee.Err == nil {
		return code
	}
	// An error can quote what baton read (an agent's stderr, GitHub's
	// answer): it reaches the terminal without its control sequences.
	fmt.Fprintf(f.IO.Err, "baton: %s\n", baton.StripControls(err.Error()))
	if code == ExitUsage && cmd != nil {
		fmt.Fprintf(f.IO.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// usageError returns an Invalid error for bad command-line input.
func usageError(format string, args ...any) error {
	return baton.Errorf(baton.Invalid, format, args...)
}

// exactArgs is cobra.ExactArgs with a usage error that names what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %s (got %d argument%s)", cmd.CommandPath(), what, len(args), plural(len(args)))
		}
		return nil
	}
}

// rangeArgs is cobra.RangeArgs with a usage error.
func rangeArgs(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return usageError("%s takes %s (got %d argument%s)", cmd.CommandPath(), what, len(args), plural(len(args)))
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with a usage error.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError("%s takes %s", cmd.CommandPath(), what)
		}
		return nil
	}
}

// noArgs rejects positional arguments, naming the first one. On a command
// that has subcommands, an argument is a mistyped subcommand: it is named
// as such, with the ones it may have meant.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasAvailableSubCommands() {
		msg := fmt.Sprintf("unknown command %q for %s", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError("%s", msg)
	}
	return usageError("%s takes no arguments (got %q)", cmd.CommandPath(), strings.Join(args, " "))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
