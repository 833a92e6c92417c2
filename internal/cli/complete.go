package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/harness"
)

// Shell completion: ids read cheaply from the store or the database, and
// the allowed values of every flag that has a fixed set. Wired over the
// whole command tree by what each command takes, so a new command that
// names an <id> completes without code of its own.

type completer = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective)

func fixed(values ...string) completer {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return prefixed(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func prefixed(values []string, prefix string) []string {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// firstArg completes only the first positional argument.
func firstArg(c completer) completer {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return c(cmd, args, toComplete)
	}
}

func (f *Factory) completePackets(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ids := []string{"latest"}
	if sums, _, err := f.Store().PacketSummaries(); err == nil {
		for _, s := range sums {
			ids = append(ids, s.ID)
		}
	}
	return prefixed(ids, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (f *Factory) completeLoops(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ids, _ := f.Store().LoopIDs()
	return prefixed(ids, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (f *Factory) completeDeliveries(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	db, _ := cmd.Flags().GetString("db")
	svc, err := f.openDeliveries(cmd.Context(), DeliveriesOptions{DB: db})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer svc.Close()
	ds, err := svc.List(cmd.Context(), baton.DeliveryFilter{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, d := range ds {
		if strings.HasPrefix(d.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(d.ID, baton.Truncate(d.Title(), 60, "…")))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (f *Factory) addCompletions(root *cobra.Command) {
	harnesses := fixed(harness.Names()...)
	agents := fixed(append(harness.AgentNames(), "command:")...)
	var phases, statuses []string
	for _, p := range delivery.FilterPhases {
		phases = append(phases, string(p))
	}
	for _, s := range delivery.FilterStatuses {
		statuses = append(statuses, string(s))
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		parent := ""
		if c.HasParent() {
			parent = c.Parent().Name()
		}
		use := c.Use
		if c.ValidArgsFunction == nil {
			switch {
			case c.Name() == "install" || c.Name() == "uninstall":
				c.ValidArgsFunction = firstArg(harnesses)
			case c.Name() == "hook" && parent == "baton":
				// hook parses its own flags, so --harness is completed here.
				events := fixed(string(harness.SessionStart), string(harness.Stop), string(harness.PostToolUse), string(harness.PreCompact))
				c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
					switch {
					case len(args) == 0:
						return events(cmd, args, toComplete)
					case args[len(args)-1] == "--harness":
						return harnesses(cmd, args, toComplete)
					}
					return prefixed([]string{"--harness"}, toComplete), cobra.ShellCompDirectiveNoFileComp
				}
			case c.Name() == "pickup", parent == "packet" && strings.Contains(use, "<id"):
				c.ValidArgsFunction = firstArg(f.completePackets)
			case parent == "loop" && (strings.Contains(use, "[id") || strings.Contains(use, "<id")):
				c.ValidArgsFunction = firstArg(f.completeLoops)
			case parent == "delivery" && strings.Contains(use, "<id>"):
				c.ValidArgsFunction = firstArg(f.completeDeliveries)
			}
		}
		flags := map[string]completer{"harness": harnesses, "agent": agents, "from-packet": f.completePackets}
		switch parent + " " + c.Name() {
		case "packet list":
			flags["status"] = fixed("draft", "active", "done", "blocked")
		case "loop list":
			flags["status"] = fixed("active", "paused", "done", "cancelled")
		case "delivery list":
			flags["status"], flags["phase"], flags["state"] = fixed(statuses...), fixed(phases...), fixed(delivery.FilterStates...)
		case "baton search":
			flags["kind"], flags["transcripts"] = fixed("packet", "loop", "note", "transcript"), fixed("on", "off")
		case "delivery create":
			flags["endpoint"] = fixed(phases...)
			flags["merge"] = fixed("squash", "merge", "rebase")
		}
		for name, comp := range flags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, comp)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
