package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
)

// maxPostRunes is GitHub's limit on a comment or review body.
const maxPostRunes = 65536

// previewLines is how many lines of a body the confirmation shows.
const previewLines = 40

func newGitHubCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "github",
		Short: "Post to GitHub after showing what will be posted",
		Long: `Post a pull request review or a comment, the external side effects a brief's
Decide step ends in. Each command first resolves everything (the repository,
the account the token acts as, the pull request or issue and its title), then
shows what will be posted, where, and as whom, and posts only when you press
Enter. Esc or any other key cancels: nothing is posted and baton exits 1.

--yes skips the prompt, for scripts. Without a terminal on stdin and without
--yes they refuse (exit 2): an agent's tool call has no terminal, so an agent
adds --yes only after you approved the exact text. Bodies are read from a file
and sent as API fields, never through a shell.`,
		Example: `  baton github review 24 --event request-changes --body-file review.md
  baton github comment 7 --body-file note.md
  baton github review 24 --event approve --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newGitHubReviewCmd(f), newGitHubCommentCmd(f))
	return cmd
}

// postOptions are the flags of the posting commands.
type postOptions struct {
	gh       githubFlags
	event    string
	bodyFile string
	yes      bool
	asJSON   bool
}

func (o *postOptions) register(cmd *cobra.Command) {
	o.gh.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.bodyFile, "body-file", "", "read the body from `FILE` (- for stdin, with --yes only)")
	fl.BoolVarP(&o.yes, "yes", "y", false, "post without asking (for scripts)")
	fl.BoolVar(&o.asJSON, "json", false, "print what was posted as JSON")
}

func newGitHubReviewCmd(f *Factory) *cobra.Command {
	var o postOptions
	cmd := &cobra.Command{
		Use:   "review <pr>",
		Short: "Submit a pull request review, after confirmation",
		Long: `Submit a review of a pull request: approve, request changes, or comment. The
review is pinned to the head commit shown in the confirmation, so a push made
meanwhile is not approved by mistake. A body is required unless approving.

Requests: the account, the pull request, the review (3). Prints the review's
URL on stdout. A GitHub App's token (GitHub Actions' GITHUB_TOKEN is one) has
no account: the review is posted "as GitHub App", and GitHub decides what the
App may do.`,
		Example: `  baton github review 24 --event comment --body-file review.md
  baton github review https://github.com/octo/app/pull/24 --event approve`,
		Args: exactArgs(1, "a pull request number, #number or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGitHubReview(cmd.Context(), f, args[0], o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.event, "event", "", "the verdict: `approve`, request-changes or comment (required)")
	return cmd
}

func newGitHubCommentCmd(f *Factory) *cobra.Command {
	var o postOptions
	cmd := &cobra.Command{
		Use:   "comment <issue|pr>",
		Short: "Comment on an issue or pull request, after confirmation",
		Long: `Post a conversation comment on an issue or a pull request.

Requests: the account, the issue or pull request, the comment (3). Prints the
comment's URL on stdout. A GitHub App's token posts "as GitHub App".`,
		Example: `  baton github comment 7 --body-file note.md
  baton github comment 24 --body-file - --yes < note.md`,
		Args: exactArgs(1, "an issue or pull request number, #number or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGitHubComment(cmd.Context(), f, args[0], o)
		},
	}
	o.register(cmd)
	return cmd
}

// events maps --event to GitHub's review events.
var events = map[string]github.ReviewEvent{
	"approve":         github.EventApprove,
	"request-changes": github.EventRequestChanges,
	"comment":         github.EventComment,
}

func runGitHubReview(ctx context.Context, f *Factory, arg string, o postOptions) error {
	number, fromURL, ok := github.ParseNumber(arg, "pull", "pulls")
	if !ok {
		return usageError("github review takes a pull request number, such as 24, #24 or a URL (got %q)", arg)
	}
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(o.event)), "_", "-")
	event, ok := events[key]
	if !ok {
		return usageError("--event must be approve, request-changes or comment (got %q)", o.event)
	}
	text, err := o.readBody(f, event != github.EventApprove)
	if err != nil {
		return err
	}
	in, err := o.confirmation(f)
	if err != nil {
		return err
	}
	t, err := f.gitHub(ctx, o.gh, fromURL)
	if err != nil {
		return err
	}
	viewer, err := t.Client.Viewer(ctx)
	if err != nil {
		return fetchFailed(err)
	}
	pr, err := t.Client.PullRequest(ctx, t.Repo, number)
	if err != nil {
		return fetchFailed(err)
	}
	verdict := strings.ReplaceAll(key, "-", " ")
	if event != github.EventComment && viewer.Login != "" && strings.EqualFold(viewer.Login, pr.Author) {
		// GitHub would answer 422; say it before asking.
		return baton.Errorf(baton.Invalid, "%s opened %s#%d, and GitHub does not let authors approve or request changes on their own pull requests: use --event comment",
			viewer.Login, t.Repo, number)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "Review pull request %s#%d %q (%s)\n", t.Repo, number, oneLineTitle(pr.Title), pr.State)
	fmt.Fprintf(&s, "  as       %s\n", viewer)
	fmt.Fprintf(&s, "  verdict  %s\n", verdict)
	fmt.Fprintf(&s, "  commit   %s (the head now)\n", shortSHA(pr.Head.SHA))
	writePreview(&s, text)
	if err := f.confirm(ctx, in, s.String()); err != nil {
		return err
	}
	rv, err := t.Client.CreateReview(ctx, t.Repo, number, github.NewReview{Event: event, Body: text, CommitID: pr.Head.SHA})
	if err != nil {
		return fetchFailed(err)
	}
	fmt.Fprintf(f.IO.Err, "baton: posted a %s review on %s#%d as %s\n", verdict, t.Repo, number, viewer)
	if o.asJSON {
		return writeJSON(f.IO.Out, postedJSON{1, "review", t.Repo.String(), number, rv.URL, viewer.Login, viewer.App, string(event), rv.ID})
	}
	_, err = fmt.Fprintln(f.IO.Out, rv.URL)
	return err
}

func runGitHubComment(ctx context.Context, f *Factory, arg string, o postOptions) error {
	number, fromURL, ok := github.ParseNumber(arg, "issues", "pull", "pulls")
	if !ok {
		return usageError("github comment takes an issue or pull request number, such as 7, #7 or a URL (got %q)", arg)
	}
	text, err := o.readBody(f, true)
	if err != nil {
		return err
	}
	in, err := o.confirmation(f)
	if err != nil {
		return err
	}
	t, err := f.gitHub(ctx, o.gh, fromURL)
	if err != nil {
		return err
	}
	viewer, err := t.Client.Viewer(ctx)
	if err != nil {
		return fetchFailed(err)
	}
	is, err := t.Client.Issue(ctx, t.Repo, number, github.IssueOptions{})
	if err != nil {
		return fetchFailed(err)
	}
	kind := "issue"
	if is.IsPullRequest {
		kind = "pull request"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "Comment on %s %s#%d %q (%s)\n", kind, t.Repo, number, oneLineTitle(is.Title), is.State)
	fmt.Fprintf(&s, "  as       %s\n", viewer)
	writePreview(&s, text)
	if err := f.confirm(ctx, in, s.String()); err != nil {
		return err
	}
	c, err := t.Client.CreateComment(ctx, t.Repo, number, text)
	if err != nil {
		return fetchFailed(err)
	}
	fmt.Fprintf(f.IO.Err, "baton: posted a comment on %s#%d as %s\n", t.Repo, number, viewer)
	if o.asJSON {
		return writeJSON(f.IO.Out, postedJSON{1, "comment", t.Repo.String(), number, c.URL, viewer.Login, viewer.App, "", c.ID})
	}
	_, err = fmt.Fprintln(f.IO.Out, c.URL)
	return err
}

type postedJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Action        string `json:"action"`
	Repo          string `json:"repo"`
	Number        int    `json:"number"`
	URL           string `json:"url"`
	// Account is the login posted as; "" for a GitHub App's token whose
	// bot GitHub does not name (App is then set).
	Account string `json:"account"`
	App     bool   `json:"app,omitempty"`
	Event   string `json:"event,omitempty"`
	ID      int64  `json:"id"`
}

// readBody reads --body-file. required says an empty body is an error.
func (o *postOptions) readBody(f *Factory, required bool) (string, error) {
	if o.bodyFile == "" {
		if required {
			return "", usageError("--body-file is required: write the text to a file and pass its path")
		}
		return "", nil
	}
	if o.bodyFile == "-" && !o.yes {
		return "", usageError("--body-file - reads stdin, which the confirmation needs: pass a file, or add --yes")
	}
	text, err := readInput(f, "--body-file", o.bodyFile)
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(text) {
		return "", usageError("%s is not UTF-8 text", o.bodyFile)
	}
	if n := utf8.RuneCountInString(text); n > maxPostRunes {
		return "", usageError("%s has %d characters; GitHub accepts at most %d", o.bodyFile, n, maxPostRunes)
	}
	if required && strings.TrimSpace(text) == "" {
		return "", usageError("%s is empty: there is nothing to post", o.bodyFile)
	}
	return text, nil
}

// terminal is stdin when it is a terminal the confirmation can put in raw
// mode.
type terminal interface {
	io.Reader
	Fd() uintptr
}

// confirmation returns the terminal to confirm on, nil with --yes, or an
// error when there is neither: posting on someone's behalf needs a person
// at a terminal or an explicit --yes. It is checked before any request.
func (o *postOptions) confirmation(f *Factory) (terminal, error) {
	return f.askTerminal(o.yes, "refusing to post without confirmation: stdin is not a terminal; run it in a terminal, or add --yes once the text is approved")
}

// confirm shows the summary of a post and asks for Enter (see ask).
func (f *Factory) confirm(ctx context.Context, in terminal, summary string) error {
	return f.ask(ctx, in, summary, "Press Enter to post, or Esc (or any other key) to cancel. ", "canceled: nothing was posted")
}

// askTerminal returns the terminal to ask a person on, nil when yes
// (--yes) answers for them, or a usage error saying refusal: what baton
// does on a person's word needs a person at a terminal or an explicit
// --yes, never an agent's tool call by default.
func (f *Factory) askTerminal(yes bool, refusal string) (terminal, error) {
	if yes {
		return nil, nil
	}
	in, ok := f.IO.In.(terminal)
	if !ok || !f.IO.InTTY || !term.IsTerminal(int(in.Fd())) {
		return nil, usageError("%s", refusal)
	}
	return in, nil
}

// ask shows summary on stderr and, with a terminal, reads one key in raw
// mode after question: Enter goes on; Esc or any other key cancels with
// the Canceled error canceled. With no terminal (--yes) it only shows
// the summary.
func (f *Factory) ask(ctx context.Context, in terminal, summary, question, canceled string) error {
	io.WriteString(f.IO.Err, summary)
	if in == nil {
		return nil
	}
	k, err := readKey(ctx, in, f.IO.Err, question)
	io.WriteString(f.IO.Err, "\n")
	if err != nil {
		return err
	}
	if k != '\r' && k != '\n' {
		return baton.Errorf(baton.Canceled, "%s", canceled)
	}
	return nil
}

// readKey puts the terminal in raw mode, shows question on w and reads
// one byte, so a single key answers without Enter and Ctrl-C arrives as a
// key (and cancels). The question comes after the mode change, so a key
// pressed once it shows is never line-buffered. The terminal is restored
// before returning, also when ctx ends first.
func readKey(ctx context.Context, in terminal, w io.Writer, question string) (byte, error) {
	fd := int(in.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return 0, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	defer term.Restore(fd, old)
	io.WriteString(w, question)
	type result struct {
		b   byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var b [1]byte
		for {
			n, err := in.Read(b[:])
			if n == 1 {
				ch <- result{b: b[0]}
				return
			}
			if err != nil {
				ch <- result{err: err}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return 0, baton.WrapError(baton.Canceled, r.err, "canceled: the terminal closed; nothing was posted")
		}
		return r.b, nil
	case <-ctx.Done():
		return 0, baton.WrapError(baton.Canceled, ctx.Err(), "canceled: nothing was posted")
	}
}

// writePreview shows a body as it will be posted, with control characters
// made visible so that text cannot rewrite the terminal it is shown on.
func writePreview(s *strings.Builder, text string) {
	if text == "" {
		s.WriteString("  body     (none)\n")
		return
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	fmt.Fprintf(s, "  body     %d bytes, %d lines\n", len(text), len(lines))
	for i, l := range lines {
		if i == previewLines {
			fmt.Fprintf(s, "    │ … %d more lines\n", len(lines)-previewLines)
			break
		}
		s.WriteString("    │ " + visible(strings.TrimSuffix(l, "\r")) + "\n")
	}
}

// visible escapes control characters (C0 but tab, DEL, C1) as \xNN.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func oneLineTitle(s string) string { return visible(strings.Join(strings.Fields(s), " ")) }

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
