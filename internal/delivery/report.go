package delivery

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/netpolicy"
)

// Each phase shows on the work pull request while it runs and when it
// ends: a commit status baton/<phase> (pending, success, failure), or a
// check run of that name with the phase log when baton acts as a GitHub
// App. It links to the delivery's dashboard page when the server has a
// public URL. Publishing is a courtesy to reviewers: a failure to publish
// is a warning in the phase's note, never a failed phase.

// reportTimeout bounds one publication, so a slow GitHub never holds a
// phase.
const reportTimeout = 30 * time.Second

// DashboardURL is the delivery's page on the server at publicURL, "" when
// there is no public URL.
func DashboardURL(publicURL, id string) string {
	if strings.TrimSpace(publicURL) == "" {
		return ""
	}
	return strings.TrimRight(publicURL, "/") + "/deliveries/" + url.PathEscape(id)
}

// reportStart publishes the claimed phase as pending. It returns the
// report for reportEnd, and a warning when publishing failed.
func (r *Runner) reportStart(ctx context.Context, d *baton.Delivery, f forge.Forge) (forge.PhaseReport, string) {
	rep := forge.PhaseReport{
		Phase: d.Phase, State: "pending", TargetURL: DashboardURL(r.Service.PublicURL, d.ID),
		Description: fmt.Sprintf("%s running (attempt %d)", d.Phase, d.Attempt),
		Summary:     fmt.Sprintf("**%s** is running, attempt %d.", d.Phase, d.Attempt),
	}
	return r.publish(ctx, d, f, rep)
}

// reportEnd publishes the phase's outcome on the head the work is at now.
func (r *Runner) reportEnd(ctx context.Context, d *baton.Delivery, f forge.Forge, rep forge.PhaseReport, out outcome, canceled bool) string {
	// The outcome's refs are not the delivery's yet: plan's pull request
	// is among them.
	dd := *d
	dd.Refs = append([]baton.Ref(nil), d.Refs...)
	for _, ref := range out.refs {
		dd.AddRef(ref)
	}
	result := "succeeded"
	switch {
	case canceled:
		rep.State, result = "failure", "canceled"
	case out.err != nil:
		rep.State, result = "failure", "failed"
	case out.verdict == baton.VerdictNotPass:
		rep.State, result = "failure", "not_pass"
	case out.skipped:
		rep.State, result = "success", "skipped"
	case out.verdict == baton.VerdictPass:
		rep.State, result = "success", "pass"
	default:
		rep.State = "success"
	}
	rep.Description = fmt.Sprintf("%s %s", d.Phase, result)
	note := out.note
	if out.err != nil {
		note = baton.ErrorMessage(out.err)
	}
	rep.Summary = r.phaseSummary(ctx, d, result, note)
	_, warn := r.publish(ctx, &dd, f, rep)
	if len(out.refused) > 0 {
		if w := r.comment(ctx, &dd, f, refusalComment(d, out.refused, out.refusedMore)); w != "" {
			warn = strings.TrimPrefix(warn+"; "+w, "; ")
		}
	}
	return warn
}

// comment posts body on the work pull request, if the forge has one.
func (r *Runner) comment(ctx context.Context, d *baton.Delivery, f forge.Forge, body string) string {
	rp, ok := f.(forge.Reporter)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	if _, err := rp.Comment(ctx, d, body); err != nil {
		return "what the network refused is not shown on the pull request: " + baton.ErrorMessage(err)
	}
	return ""
}

// maxRefusalLines is how many refused targets a comment lists.
const maxRefusalLines = 30

// refusalComment is the pull request comment that shows a person what
// the network of a phase's boxes refused. Targets come from the box, so
// each is shown in a code span it cannot leave.
func refusalComment(d *baton.Delivery, list []netpolicy.RefusalCount, more int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**baton: the network refused %d target(s) during %s (attempt %d)**\n\n", len(list), d.Phase, d.Attempt)
	b.WriteString("The agent and the commands that run its code reach only their allowlist: the agent's model API, " +
		"the forge, package registries, and what the server's `--egress-allow` or `egress_allow` in `.agent/delivery.json` add. " +
		"If the work needs one of these, add it there; if it does not, something tried to reach it.\n\n")
	for i, r := range list {
		if i == maxRefusalLines {
			more += len(list) - i
			break
		}
		what := map[string]string{"dns": "DNS lookup", "udp": "UDP"}[r.Via]
		if what == "" {
			what = "connection"
		}
		fmt.Fprintf(&b, "- `%s` (%s", codeSpan(r.Target()), what)
		if r.Count > 1 {
			fmt.Fprintf(&b, ", %d tries", r.Count)
		}
		fmt.Fprintf(&b, "): %s\n", oneLine(r.Why, 200))
	}
	if more > 0 {
		fmt.Fprintf(&b, "- … and %d more\n", more)
	}
	return b.String() + "\n" + forge.Marker + "\n"
}

// codeSpan is s made safe inside a one-backtick code span.
func codeSpan(s string) string {
	return strings.ReplaceAll(baton.StripControls(s), "`", "'")
}

// publish sends rep through the forge, if it reports phases at all.
func (r *Runner) publish(ctx context.Context, d *baton.Delivery, f forge.Forge, rep forge.PhaseReport) (forge.PhaseReport, string) {
	rp, ok := f.(forge.Reporter)
	if !ok {
		return rep, ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	got, _, err := rp.ReportPhase(ctx, d, rep)
	if err != nil {
		return rep, fmt.Sprintf("%s not shown on the pull request: %s", forge.StatusPrefix+string(d.Phase), baton.ErrorMessage(err))
	}
	return got, ""
}

// maxSummaryEntries is how much of the phase log a check run shows.
const maxSummaryEntries = 30

// phaseSummary is the check run's text: the outcome, then the phase log,
// newest last.
func (r *Runner) phaseSummary(ctx context.Context, d *baton.Delivery, result, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s %s** (attempt %d)", d.Phase, result, d.Attempt)
	if note != "" {
		b.WriteString(": " + oneLine(note, 1000))
	}
	b.WriteString("\n\n### Phase log\n\n")
	log, err := r.Service.Store().PhaseLog(ctx, d.ID)
	if err != nil {
		b.WriteString("(not readable now: " + baton.ErrorMessage(err) + ")\n")
		return b.String()
	}
	if len(log) > maxSummaryEntries {
		fmt.Fprintf(&b, "… %d earlier entries\n", len(log)-maxSummaryEntries)
		log = log[len(log)-maxSummaryEntries:]
	}
	for _, e := range log {
		fmt.Fprintf(&b, "- %s `%s %s`", e.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), e.Phase, e.Status)
		if e.Verdict != "" {
			fmt.Fprintf(&b, " (%s)", e.Verdict)
		}
		fmt.Fprintf(&b, " · %s by %s", e.Action, oneLine(e.Actor, 100))
		if e.Note != "" {
			b.WriteString(": " + oneLine(e.Note, 300))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// oneLine makes text from agents and people one markdown-safe line of at
// most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(baton.StripControls(s)), " ")
	return baton.Truncate(s, n, "…")
}
