package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/search"
)

type searchOptions struct {
	kinds       []string
	limit       int
	asJSON      bool
	transcripts string
}

func newSearchCmd(f *Factory) *cobra.Command {
	var o searchOptions
	cmd := &cobra.Command{
		Use:   "search <words...>",
		Short: "Find what earlier sessions wrote: packets, loop prompts and notes, transcripts",
		Long: `Search the project's context for words: packets (purpose and sections),
loops' prompts, loops' notes, and (when the project opts in) the messages of
the session transcripts this machine's session log names. Every
word must appear, in any form the stemmer equates (test, tests, testing);
when nothing has them all, results with any of them are listed instead.
Results come best first, with a snippet (matching words in «»), the packet,
loop or session id, and the file.

The index is search.db (SQLite FTS5) in this machine's own directory of the
store (.agent/context/indexes/machine-*), never committed and never taken from
a checkout; each search first indexes what changed since the last.

--transcripts on|off opts this project in or out of searching its session
transcripts (they stay on this machine, like the index); alone it only
changes the setting and indexes them. The first search after opting in reads
every transcript once.`,
		Example: `  baton search jwt refresh
  baton search "flaky test" --kind packet --kind note --json
  baton search --transcripts on
  baton search migration decision --limit 5`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSearch(cmd.Context(), f, strings.Join(args, " "), o)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.kinds, "kind", nil, "only results of this `KIND`: packet, loop, note or transcript (repeatable)")
	fl.IntVar(&o.limit, "limit", 20, "at most `N` results")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON for agents and scripts")
	fl.StringVar(&o.transcripts, "transcripts", "", "search this project's session transcripts: `on` or off (remembered)")
	return cmd
}

func runSearch(ctx context.Context, f *Factory, text string, o searchOptions) error {
	if o.limit <= 0 {
		return usageError("--limit must be positive")
	}
	q := search.Query{Text: text, Limit: o.limit}
	for _, k := range o.kinds {
		kind, err := search.ParseKind(k)
		if err != nil {
			return usageError("--kind: %s", baton.ErrorMessage(err))
		}
		q.Kinds = append(q.Kinds, kind)
	}
	st := f.Store()
	if o.transcripts != "" {
		on, err := parseOnOff(o.transcripts)
		if err != nil {
			return err
		}
		rep, err := setSearchTranscripts(ctx, f, on)
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			state := "off: transcripts are not searched"
			if on {
				state = fmt.Sprintf("on: %d transcript message(s) indexed now", rep.Messages)
			}
			_, err = fmt.Fprintf(f.IO.Out, "search transcripts %s\n", state)
			return err
		}
	}
	if strings.TrimSpace(text) == "" {
		return usageError("baton search needs words to look for (or --transcripts on|off)")
	}
	res, rep, err := search.Run(ctx, st, q)
	if err != nil {
		return err
	}
	for _, s := range rep.Skipped {
		f.warnf("not searched: %s", s)
	}
	if o.asJSON {
		out := struct {
			SchemaVersion int             `json:"schema_version"`
			Query         string          `json:"query"`
			Transcripts   bool            `json:"transcripts"`
			Results       []search.Result `json:"results"`
			Skipped       []string        `json:"skipped"`
		}{1, text, rep.Transcripts, res, nonNilStrings(rep.Skipped)}
		if out.Results == nil {
			out.Results = []search.Result{}
		}
		return writeJSON(f.IO.Out, out)
	}
	w := printable(f.IO.Out)
	if len(res) == 0 {
		hint := ""
		if !rep.Transcripts {
			hint = " (transcripts are not searched: `baton search --transcripts on`)"
		}
		_, err := fmt.Fprintf(w, "nothing matches %q%s\n", text, hint)
		return err
	}
	if res[0].AnyWords {
		fmt.Fprintf(w, "nothing has all of %q; results with any of its words:\n\n", text)
	}
	for _, r := range res {
		fmt.Fprintf(w, "%s %s  %s\n  %s\n  %s\n\n", r.Kind, r.ID, oneLineText(r.Title), oneLineText(r.Snippet), r.Path)
	}
	return nil
}

// setSearchTranscripts opts the project in or out of searching its
// session transcripts, and brings the index up to date with that.
func setSearchTranscripts(ctx context.Context, f *Factory, on bool) (search.Report, error) {
	st, err := f.ensureStore(ctx)
	if err != nil {
		return search.Report{}, err
	}
	ix, err := search.Open(ctx, st)
	if err != nil {
		return search.Report{}, err
	}
	defer ix.Close()
	if err := ix.SetTranscripts(ctx, on); err != nil {
		return search.Report{}, err
	}
	return ix.Refresh(ctx)
}

func parseOnOff(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true", "yes":
		return true, nil
	case "off", "false", "no":
		return false, nil
	}
	return false, usageError("--transcripts takes on or off, got %q", s)
}

// oneLineText is s on one line.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
