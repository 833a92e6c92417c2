package goaltree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/prompt"
)

// Inputs is everything one iteration's prompt and context files are made
// of, held in memory. Nothing is read back from context/: those files are
// written for humans, and the prompt never depends on them.
type Inputs struct {
	RunID     string
	Iter      int
	Tree      *Node
	Selection Selection // State Open
	Guard     string
	Limits    Limits
	// History is the last summary, after a retry or an agent error.
	History string
	// Failure is the last guard failure, after done and a failing guard.
	Failure     string
	Assumptions string
	Questions   string
}

func (in Inputs) node() *Node { return in.Selection.Node }

// goalText is the body of goal.md and of the prompt's Goal section.
func goalText(n *Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "title: %s\n", oneLine(n.Title))
	fmt.Fprintf(&b, "goal: %s\n", strings.TrimSpace(n.Goal))
	b.WriteString("acceptance:\n")
	if len(n.Acceptance) == 0 {
		b.WriteString("- (none given: the guard decides)\n")
	}
	for _, a := range n.Acceptance {
		fmt.Fprintf(&b, "- %s\n", oneLine(a))
	}
	return b.String()
}

// writeContext clears dir and writes the iteration's ephemeral files:
// goal.md always, history.md only with a history, failure.md only with a
// failure.
func writeContext(l Layout, dir string, in Inputs) error {
	if err := l.removeAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	if err := l.mkdirAll(dir); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	files := []struct {
		name, heading, body string
	}{
		{goalContext, "# Goal", goalText(in.node())},
		{historyContext, "# History (previous attempt)", in.History},
		{failureContext, "# Failure (previous attempt)", in.Failure},
	}
	for _, f := range files {
		if strings.TrimSpace(f.body) == "" {
			continue
		}
		text := f.heading + "\n\n" + strings.TrimRight(f.body, "\n") + "\n"
		if err := l.writeFile(filepath.Join(dir, f.name), []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// Section keys, in prompt order.
const (
	sectionContract    = "contract"
	sectionGoal        = "goal"
	sectionHistory     = "history"
	sectionFailure     = "failure"
	sectionSelected    = "selected"
	sectionTree        = "tree"
	sectionAssumptions = "assumptions"
	sectionQuestions   = "questions"
	sectionOutput      = "output"
)

// sections returns the nine sections of seed 002, in its order. Over
// budget they drop tree first, then assumptions, questions, history and
// failure; contract, goal, selected and output always stay, and the
// contract and output bookends are never cut.
func sections(in Inputs) []prompt.Section {
	return []prompt.Section{
		{Key: sectionContract, Heading: "## Runner Contract", Body: contractText(in), Bookend: true},
		{Key: sectionGoal, Heading: "## Goal", Body: goalText(in.node()), Required: true},
		{Key: sectionHistory, Heading: "## History (previous attempt)", Body: in.History, DropRank: 4},
		{Key: sectionFailure, Heading: "## Failure (previous attempt)", Body: in.Failure, DropRank: 5},
		{Key: sectionSelected, Heading: "## Selected Node", Body: selectedText(in), Required: true},
		{Key: sectionTree, Heading: "## Tree Summary", Body: Summary(in.Tree, in.node().ID, DefaultSummaryNodes), DropRank: 1},
		{Key: sectionAssumptions, Heading: "## Assumptions", Body: in.Assumptions, DropRank: 2},
		{Key: sectionQuestions, Heading: "## Open Questions", Body: in.Questions, DropRank: 3},
		{Key: sectionOutput, Heading: "## Output Contract", Body: outputText(in), Bookend: true},
	}
}

// buildPrompt renders the sections under opts.
func buildPrompt(in Inputs, opts prompt.Options) (*prompt.Pack, error) {
	return prompt.Build(sections(in), opts)
}

func contractText(in Inputs) string {
	state := dir + "/" + stateDir + "/"
	return fmt.Sprintf(`You are one fresh session of baton's goal-tree runner (run %s, iteration %d). The runner works through a tree of tasks one leaf at a time; this session works on the selected node below and nothing else.

- Work only on the selected node. Other nodes belong to other sessions, before or after you.
- Nobody will answer questions. When you must choose, choose what a careful engineer would, record it as one line in %s%s, and carry on. Put questions a human should answer in %s%s.
- The runner owns %s%s, %s and %s. Do not edit them: an edit is reverted and costs this node an attempt.
- The node passes only when you answer done AND the guard passes. The runner runs the guard after you finish: %s
- Stay on the current branch and do not rewrite history. The runner commits everything when you finish; committing yourself is allowed.
- For reference, %s/%s/ holds this session's goal (and history or failure) as files; this prompt already contains them.`,
		in.RunID, in.Iter,
		state, assumptionsFile, state, questionsFile,
		state, treeFile, RunStateFile, ConfigFile,
		guardText(in.Guard),
		dir, contextDir)
}

func guardText(guard string) string {
	if strings.ContainsAny(guard, "`\n") {
		return "\n\n```sh\n" + guard + "\n```"
	}
	return "`" + guard + "`."
}

func selectedText(in Inputs) string {
	n := in.node()
	var b strings.Builder
	var ids []string
	for _, p := range in.Selection.Path {
		ids = append(ids, p.ID)
	}
	fmt.Fprintf(&b, "path: %s\n", strings.Join(ids, " > "))
	fmt.Fprintf(&b, "id: %s\n", n.ID)
	fmt.Fprintf(&b, "title: %s\n", oneLine(n.Title))
	fmt.Fprintf(&b, "next: %s\n", n.Next)
	fmt.Fprintf(&b, "attempt: %d of %d\n", n.Attempts+1, n.MaxAttempts)
	if p := in.Selection.Path; len(p) >= 2 {
		parent := p[len(p)-2]
		fmt.Fprintf(&b, "parent: %s %s\n", parent.ID, oneLine(parent.Title))
		if g := strings.TrimSpace(parent.Goal); g != "" {
			fmt.Fprintf(&b, "parent goal: %s\n", g)
		}
	}
	return b.String()
}

const childShape = `{"title": "...", "goal": "...", "acceptance": ["..."], "next": "execute"}`

func outputText(in Inputs) string {
	n := in.node()
	if n.Next == nextDecompose {
		return fmt.Sprintf(`This is a decompose node: split it into children that, done in order, achieve its goal. Do not implement them.

End your session with a final message that is only this JSON object:

{"status": "decomposed", "summary": "...", "children": [%s, ...]}

- Give 1 to %d children, in the order they should be done. Size each for one focused session of about 30 minutes; do not make separate children for implementing, testing and formatting the same change.
- Each child needs a self-contained goal and acceptance criteria the guard or a reader can check.
- "next" is "execute" for a child one session can finish, "decompose" only for one that is still too big%s.
- If you cannot decompose it yet, answer {"status": "retry", "summary": "...", "children": null} and say why in the summary.`,
			childShape, in.Limits.MaxChildren, depthNote(in))
	}
	return `End your session with a final message that is only this JSON object:

{"status": "done" | "retry", "summary": "...", "children": null}

- "done": the acceptance criteria are met and you expect the guard to pass. The runner then runs the guard; the node passes only if it does.
- "retry": the node is not finished. The next attempt is a fresh session that sees only your summary: say what you did, what is left, and what you learned.
- The summary is plain prose, a few sentences. Children are only for decompose nodes: leave "children" null.`
}

func depthNote(in Inputs) string {
	depth := len(in.Selection.Path) // depth of the children
	if depth >= in.Limits.MaxDepth {
		return fmt.Sprintf(" (not allowed here: children at depth %d must be execute nodes)", depth)
	}
	return ""
}

// Template first lines of the state notes files. What follows them is
// what agents and people wrote; a file holding only the template is empty.
const (
	assumptionsTemplate = "# Assumptions\n\nOne line per assumption a session made instead of asking (\"- ...\"). Kept across iterations.\n"
	questionsTemplate   = "# Open Questions\n\nOne line per question for a human (\"- ...\"). Kept across iterations.\n"
)

// readNotes returns the text of a state notes file without its template,
// or "" when it is missing or holds only the template. It reads at most
// max bytes: the prompt budget would drop a huge file anyway.
func readNotes(l Layout, path, template string, max int) (string, error) {
	f, err := l.openFile(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	text := strings.ToValidUTF8(strings.ReplaceAll(string(buf[:n]), "\r\n", "\n"), "")
	text = strings.TrimPrefix(text, template)
	text = strings.TrimSpace(text)
	if n == max {
		text += "\n[truncated]"
	}
	return text, nil
}
