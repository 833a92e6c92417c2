package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersionCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print baton's version",
		Long:    "Print the version of this baton binary and the Go toolchain that built it.",
		Example: "  baton version\n  baton version --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int    `json:"schema_version"`
					Version       string `json:"version"`
					Go            string `json:"go"`
					Platform      string `json:"platform"`
				}{1, f.Version, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintf(f.IO.Out, "baton %s (%s, %s/%s)\n", f.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}
