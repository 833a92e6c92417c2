package cli

import (
	"github.com/spf13/cobra"
)

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "baton",
		Short: "Give coding agents the right context at every step, and keep it",
		Long: `baton keeps an agent's working context in a project-local store
(.agent/context/) that every agent product reads and writes: handoff packets
that carry a task from one session to the next, loops that repeat a prompt
until the agent states a promise, and a log of the files that matter.

It also renders task briefs (review-pr, fix-issue, implement-feature), runs
fresh agent sessions over a goal tree with guards, and carries an issue to a
merged pull request through a delivery pipeline.`,
		Example: `  baton init                           # create .agent/context/ here
  baton handoff "finish the auth refactor" --next-prompt "Run the auth tests and fix what fails"
  baton pickup latest                  # the prompt for the next session
  baton packet list`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		Version: f.Version,
	}
	root.SetVersionTemplate("baton {{.Version}}\n")
	root.PersistentFlags().StringVar(&f.rootFlag, "root", "", "project root holding .agent/context (default: discovered from the working directory; env BATON_ROOT)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagError(err) })

	root.AddCommand(
		newVersionCmd(f),
		newInitCmd(f),
		newRootPathCmd(f),
		newHandoffCmd(f),
		newPickupCmd(f),
		newPacketCmd(f),
		newFilesCmd(f),
		newSearchCmd(f),
		newHookCmd(f),
		newLoopCmd(f),
		newInstallCmd(f),
		newUninstallCmd(f),
		newDoctorCmd(f),
		newMigrateCmd(f),
		newDeliveryCmd(f),
		newWorkerCmd(f),
		newServeCmd(f),
		newSourceCmd(f),
		newQuickstartCmd(f),
		newRunCmd(f),
		newReviewPRCmd(f),
		newFixIssueCmd(f),
		newImplementFeatureCmd(f),
		newGitHubCmd(f),
		newMCPCmd(f),
		newHealthcheckCmd(f),
	)
	// The completion command cobra adds: an unknown shell is an error,
	// not its help page and exit 0.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = noArgs
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
	}
	f.addCompletions(root)
	return root
}
