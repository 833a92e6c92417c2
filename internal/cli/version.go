package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/buildinfo"
)

func newVersionCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print baton's version",
		Long:    "Print the version of this baton binary, the commit it was built from, and the Go toolchain that built it.",
		Example: "  baton version\n  baton version --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int    `json:"schema_version"`
					Version       string `json:"version"`
					Commit        string `json:"commit,omitempty"`
					Go            string `json:"go"`
					Platform      string `json:"platform"`
				}{1, f.Version, f.Commit, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintln(f.IO.Out, buildinfo.Line("baton", f.Version, f.Commit))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}
