package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

func newPacketCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "packet",
		Short: "List, show, open and mark handoff packets",
		Long: `Work with the handoff packets in .agent/context/packets/.

A packet is named by its id, a unique prefix of the id or of its slug, or
"latest". Status moves between draft, active, done and blocked.`,
		Example: `  baton packet list --status draft
  baton packet show latest
  baton packet open auth --edit
  baton packet activate 20261122T093400Z-auth-refactor`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newPacketListCmd(f),
		newPacketShowCmd(f),
		newPacketOpenCmd(f),
		newPacketStatusCmd(f, "activate", baton.PacketActive, "Mark a packet active (the work it describes is under way)"),
		newPacketStatusCmd(f, "done", baton.PacketDone, "Mark a packet done"),
		newPacketStatusCmd(f, "block", baton.PacketBlocked, "Mark a packet blocked"),
	)
	return cmd
}

// packetJSON is a packet as --json prints it.
type packetJSON struct {
	ID                     string            `json:"id"`
	Path                   string            `json:"path"`
	Status                 string            `json:"status"`
	Purpose                string            `json:"purpose"`
	CreatedAt              string            `json:"created_at"`
	UpdatedAt              string            `json:"updated_at"`
	Source                 string            `json:"source,omitempty"`
	SessionID              string            `json:"session_id,omitempty"`
	TranscriptPath         string            `json:"transcript_path,omitempty"`
	RelevantFilesConfirmed []string          `json:"relevant_files_confirmed"`
	RelevantFilesSuggested []string          `json:"relevant_files_suggested"`
	Validators             []string          `json:"validators"`
	LoopPromise            *string           `json:"loop_promise"`
	LoopMaxIterations      int               `json:"loop_max_iterations"`
	Sections               map[string]string `json:"sections,omitempty"`
}

func toPacketJSON(st *fsstore.Store, p *baton.Packet, withSections bool) packetJSON {
	path, _ := st.PacketPath(p.ID)
	j := packetJSON{
		ID: p.ID, Path: path, Status: string(p.Status), Purpose: p.Purpose,
		CreatedAt: baton.FormatTime(p.CreatedAt), UpdatedAt: baton.FormatTime(p.UpdatedAt),
		Source: p.Source, SessionID: p.SessionID, TranscriptPath: p.TranscriptPath,
		RelevantFilesConfirmed: nonNilStrings(p.RelevantFilesConfirmed),
		RelevantFilesSuggested: nonNilStrings(p.RelevantFilesSuggested),
		Validators:             nonNilStrings(p.Validators),
		LoopPromise:            p.LoopPromise, LoopMaxIterations: p.LoopMaxIterations,
	}
	if withSections {
		j.Sections = map[string]string{}
		for _, s := range p.Sections {
			j.Sections[s.Heading] = s.Text()
		}
	}
	return j
}

// defaultPacketPage is how many packets `packet list` shows unless asked:
// a store gathers thousands, and the newest are the ones wanted.
const defaultPacketPage = 50

func newPacketListCmd(f *Factory) *cobra.Command {
	var status, cursor string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List packets, most recently updated first",
		Long: `List packets, most recently updated first, a page at a time: the newest 50
unless --limit says otherwise (0 lists them all). When there are more, the
last line on stderr (next_cursor in JSON) gives the --cursor of the next
page. Files that cannot be read are skipped with a warning on stderr.`,
		Example: "  baton packet list\n  baton packet list --status active --json\n  baton packet list --limit 0",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := fsstore.PacketQuery{Status: baton.PacketStatus(status), Limit: limit, Cursor: cursor, Full: asJSON}
			if status != "" && !q.Status.Valid() {
				return usageError("--status %q is not one of draft, active, done, blocked", status)
			}
			if limit < 0 {
				return usageError("--limit %d: give a number of packets, or 0 for all", limit)
			}
			st := f.Store()
			page, err := st.ListPackets(q)
			if err != nil {
				return err
			}
			for _, w := range page.Skipped {
				fmt.Fprintf(f.IO.Err, "baton: warning: skipped %v\n", w)
			}
			if asJSON {
				out := struct {
					SchemaVersion int          `json:"schema_version"`
					Packets       []packetJSON `json:"packets"`
					Skipped       []string     `json:"skipped"`
					More          int          `json:"more"`
					NextCursor    string       `json:"next_cursor,omitempty"`
				}{SchemaVersion: 1, Packets: []packetJSON{}, Skipped: []string{}, More: page.More, NextCursor: page.Next}
				for _, p := range page.Packets {
					out.Packets = append(out.Packets, toPacketJSON(st, p, false))
				}
				for _, w := range page.Skipped {
					out.Skipped = append(out.Skipped, w.Error())
				}
				return writeJSON(f.IO.Out, out)
			}
			if len(page.Summaries) == 0 && cursor == "" {
				fmt.Fprintln(f.IO.Err, "no packets: create one with `baton handoff <purpose>`")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tUPDATED\tPURPOSE")
			for _, p := range page.Summaries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.Status, baton.FormatTime(p.UpdatedAt), clip(p.Purpose, 60))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.Next != "" {
				fmt.Fprintf(f.IO.Err, "%d more: baton packet list --cursor %s (or --limit 0 for all)\n", page.More, page.Next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only packets with this `STATUS` (draft, active, done, blocked)")
	cmd.Flags().IntVar(&limit, "limit", defaultPacketPage, "show at most `N` packets (0 = all)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after the page that printed this `CURSOR`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func newPacketShowCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show <id|prefix|latest>",
		Short:   "Print a packet",
		Long:    "Print a packet's file as it is on disk, or its fields and sections as JSON.",
		Example: "  baton packet show latest\n  baton packet show auth --json",
		Args:    exactArgs(1, "one packet id, prefix or latest"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := f.Store()
			p, err := st.ResolvePacket(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int `json:"schema_version"`
					packetJSON
				}{1, toPacketJSON(st, p, true)})
			}
			path, _ := st.PacketPath(p.ID)
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			_, err = f.IO.Out.Write(b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func newPacketOpenCmd(f *Factory) *cobra.Command {
	var edit bool
	cmd := &cobra.Command{
		Use:   "open <id|prefix|latest>",
		Short: "Print a packet's path, or open it in $EDITOR",
		Long: `Print the packet file's path, or with --edit open it in $VISUAL or $EDITOR.
After editing, the packet is read back to check that it still parses.`,
		Example: "  baton packet open latest\n  baton packet open auth --edit\n  $EDITOR \"$(baton packet open latest)\"",
		Args:    exactArgs(1, "one packet id, prefix or latest"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := f.Store()
			p, err := st.ResolvePacket(args[0])
			if err != nil {
				return err
			}
			path, _ := st.PacketPath(p.ID)
			if !edit {
				_, err := fmt.Fprintln(f.IO.Out, path)
				return err
			}
			return editFile(cmd.Context(), f, path, func() error { _, err := st.FindPacketByID(p.ID); return err })
		},
	}
	cmd.Flags().BoolVar(&edit, "edit", false, "open the packet in $VISUAL or $EDITOR")
	return cmd
}

// editFile runs the user's editor on path, then check to validate it.
func editFile(ctx context.Context, f *Factory, path string, check func() error) error {
	editor := firstNonEmpty(f.env("VISUAL"), f.env("EDITOR"))
	if editor == "" {
		return usageError("set $EDITOR (or $VISUAL) to edit packets, or open %s yourself", path)
	}
	// The editor setting may carry arguments ("code --wait"); split on
	// spaces, never through a shell.
	argv := strings.Fields(editor)
	c := exec.CommandContext(ctx, argv[0], append(argv[1:], path)...)
	c.Stdin, c.Stdout, c.Stderr = f.IO.In, f.IO.Out, f.IO.Err
	if err := c.Run(); err != nil {
		return fmt.Errorf("run editor %q: %w", editor, err)
	}
	if err := check(); err != nil {
		return fmt.Errorf("the edited packet no longer parses (fix it and save again): %w", err)
	}
	return nil
}

func newPacketStatusCmd(f *Factory, verb string, to baton.PacketStatus, short string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     verb + " <id|prefix|latest>",
		Short:   short,
		Long:    short + ". This sets status to " + string(to) + " and updates updated_at; nothing else changes.",
		Example: "  baton packet " + verb + " latest",
		Args:    exactArgs(1, "one packet id, prefix or latest"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := f.Store()
			p, err := st.ResolvePacket(args[0])
			if err != nil {
				return err
			}
			from := p.Status
			p, err = st.UpdatePacket(cmd.Context(), p.ID, func(p *baton.Packet) error {
				p.Status = to
				return nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					SchemaVersion int `json:"schema_version"`
					packetJSON
				}{1, toPacketJSON(st, p, false)})
			}
			_, err = fmt.Fprintf(f.IO.Out, "packet %s: %s -> %s\n", p.ID, from, p.Status)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}
