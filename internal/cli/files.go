package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

func newFilesCmd(f *Factory) *cobra.Command {
	var since string
	var all, asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "files",
		Short: "List the files agents touched, ranked by recency and count",
		Long: `List the relevant files recorded in this machine's touch log of the store:
files agents changed (recorded by the post-tool-use hook) and files people
confirmed (baton files add, handoff --file). Each file appears once, with
its count and last touch, ranked by a score where every touch counts and
recent touches count more (a touch loses half its weight per hour).

By default it lists what the next handoff would suggest: entries since the
newest packet. --since PACKET starts after that packet instead; --all lists
the whole log. The log is streamed, so even a huge log uses little memory.`,
		Example: `  baton files
  baton files --all --limit 20
  baton files --since 20261122T093400Z-auth --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := f.Store().Files(fsstore.FilesRequest{Since: since, All: all, Limit: limit})
			if err != nil {
				return err
			}
			if res.SkippedLines > 0 {
				f.warnf("skipped %d unreadable line(s) in %s", res.SkippedLines, fsstore.RelevantFilesLog)
			}
			if res.Approximate {
				f.warnf("counts are approximate: the log's touches around %s were merged when it was compacted (exact since any of the newest 64 packets)", baton.FormatTime(res.SinceTime))
			}
			if asJSON {
				out := struct {
					SchemaVersion int                `json:"schema_version"`
					Since         *time.Time         `json:"since"`
					Files         []fsstore.FileRank `json:"files"`
					Approximate   bool               `json:"approximate,omitempty"`
				}{SchemaVersion: 1, Files: res.Files, Approximate: res.Approximate}
				if !res.SinceTime.IsZero() {
					out.Since = &res.SinceTime
				}
				return writeJSON(f.IO.Out, out)
			}
			sinceDesc := "all entries"
			if res.Since != nil {
				sinceDesc = "since packet " + res.Since.ID
			}
			if len(res.Files) == 0 {
				fmt.Fprintf(f.IO.Err, "no relevant files (%s)\n", sinceDesc)
				return nil
			}
			fmt.Fprintf(f.IO.Err, "%d file(s), %s\n", len(res.Files), sinceDesc)
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PATH\tCOUNT\tLAST\tSOURCE")
			for _, r := range res.Files {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Path, r.Count, baton.FormatTime(r.LastSeen), r.Source)
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&since, "since", "", "only entries after `PACKET` was created (id, prefix or latest)")
	fl.BoolVar(&all, "all", false, "list the whole log")
	fl.IntVar(&limit, "limit", 0, "show at most `N` files (0 = all)")
	fl.BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	cmd.AddCommand(newFilesAddCmd(f))
	return cmd
}

func newFilesAddCmd(f *Factory) *cobra.Command {
	var packetRef string
	var missingOK bool
	cmd := &cobra.Command{
		Use:   "add <path>...",
		Short: "Record files as confirmed relevant",
		Long: `Record files as confirmed relevant (source "user") in the relevant-files log.
Paths are taken relative to the current directory and stored relative to
the project root. With --packet, the entries name that packet.`,
		Example: "  baton files add internal/auth/jwt.go internal/auth/jwt_test.go\n  baton files add docs/auth.md --packet latest",
		Args:    minArgs(1, "one or more paths"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.ensureStore(cmd.Context())
			if err != nil {
				return err
			}
			packetID := ""
			if packetRef != "" {
				p, err := st.ResolvePacket(packetRef)
				if err != nil {
					return err
				}
				packetID = p.ID
			}
			recorded, err := st.ConfirmFiles(cmd.Context(), f.WorkDir, args, packetID, missingOK, f.now())
			if err != nil {
				return err
			}
			for _, p := range recorded {
				fmt.Fprintln(f.IO.Out, p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&packetRef, "packet", "", "the `PACKET` these files belong to (id, prefix or latest)")
	cmd.Flags().BoolVar(&missingOK, "missing-ok", false, "record paths that do not exist (yet)")
	return cmd
}
