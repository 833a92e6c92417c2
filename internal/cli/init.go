package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newInitCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the context store (.agent/context/) in the project root",
		Long: `Create .agent/context/ with root.json (a stable project_id), packets/,
loops/, indexes/ and scratch/. Running it again changes nothing.

The project root is the nearest ancestor that already has a store, else the
git root, else the current directory; --root or BATON_ROOT override it.
Commands that write (handoff, files add, loop start, hooks) create the store
on first use, so init is only needed to choose the root explicitly.`,
		Example: "  baton init\n  baton init --root ~/src/app",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkExplicitRoot(); err != nil {
				return err
			}
			st := f.Store()
			created, err := st.Init(cmd.Context())
			if err != nil {
				return err
			}
			root, err := st.ReadRoot()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int    `json:"schema_version"`
					Root          string `json:"root"`
					Dir           string `json:"dir"`
					ProjectID     string `json:"project_id"`
					Created       bool   `json:"created"`
				}{1, st.Root(), st.Dir(), root.ProjectID, created})
			}
			verb := "already exists"
			if created {
				verb = "created"
			}
			_, err = fmt.Fprintf(f.IO.Out, "%s %s (project %s)\n", st.Dir(), verb, root.ProjectID)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func newRootPathCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "root",
		Short: "Print the project root baton uses here",
		Long: `Print the project root that holds (or will hold) .agent/context/.

Discovery: the nearest ancestor holding .agent/context/root.json, else the
git root, else the current directory. --root and BATON_ROOT override it.`,
		Example: "  baton root\n  cd internal/deep/pkg && baton root --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, how := f.projectRoot()
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int    `json:"schema_version"`
					Root          string `json:"root"`
					FoundBy       string `json:"found_by"`
					HasStore      bool   `json:"has_store"`
				}{1, root, string(how), f.Store().Exists()})
			}
			_, err := fmt.Fprintln(f.IO.Out, root)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts (includes how the root was found)")
	return cmd
}
