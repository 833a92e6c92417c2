package cli

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
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
			built := ""
			if f.Commit != "" && !strings.Contains(f.Version, shortCommit(f.Commit)) {
				built = "commit " + shortCommit(f.Commit) + ", "
			}
			_, err := fmt.Fprintf(f.IO.Out, "baton %s (%s%s, %s/%s)\n", f.Version, built, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

// shortCommit is the first 12 characters of a commit id.
func shortCommit(c string) string { return c[:min(12, len(c))] }
