package prompt

import (
	"github.com/baton-agent/baton/internal/golden"

	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// runnerSections mirrors the goal-tree runner's nine sections and their
// drop ranks (tree first, failure last).
func runnerSections(treeBody string) []Section {
	return []Section{
		{Key: "contract", Heading: "## Runner Contract", Body: "Work on the selected node only.", Bookend: true},
		{Key: "goal", Heading: "## Goal", Body: "Add JWT auth.", Required: true},
		{Key: "history", Heading: "## History", Body: "Tried bcrypt; missing dependency.", DropRank: 4},
		{Key: "failure", Heading: "## Failure", Body: "error[E0432]: unresolved import `bcrypt`", DropRank: 5},
		{Key: "selected", Heading: "## Selected Node", Body: "id: 1.2\ntitle: auth", Required: true},
		{Key: "tree", Heading: "## Tree Summary", Body: treeBody, DropRank: 1},
		{Key: "assumptions", Heading: "## Assumptions", Body: "Tokens are HS256.", DropRank: 2},
		{Key: "questions", Heading: "## Open Questions", Body: "Refresh tokens?", DropRank: 3},
		{Key: "output", Heading: "## Output Contract", Body: `Reply with {"status": "done"|"retry", "summary": "..."}`, Bookend: true},
	}
}

func TestBudgetDropOrder(t *testing.T) {
	t.Parallel()
	tree := strings.Repeat("- node\n", 40)
	full, err := Build(runnerSections(tree), Options{BudgetBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	size := len(full.Text)
	treeSize := len("## Tree Summary\n\n"+strings.TrimSpace(tree)) + len(separator)
	var must []Section
	for _, s := range runnerSections(tree) {
		if s.Required || s.Bookend {
			must = append(must, s)
		}
	}
	mustOnly, _ := Build(must, Options{BudgetBytes: 1 << 20})
	tests := []struct {
		name   string
		budget int
		want   []string
	}{
		{"fits", size, []string{"contract", "goal", "history", "failure", "selected", "tree", "assumptions", "questions", "output"}},
		{"drops tree first", size - 1, []string{"contract", "goal", "history", "failure", "selected", "assumptions", "questions", "output"}},
		{"then assumptions", size - treeSize - 1, []string{"contract", "goal", "history", "failure", "selected", "questions", "output"}},
		{"required survive", len(mustOnly.Text) + 10, []string{"contract", "goal", "selected", "output"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pack, err := Build(runnerSections(tree), Options{BudgetBytes: tt.budget})
			if err != nil {
				t.Fatalf("Build(budget=%d) error: %v", tt.budget, err)
			}
			if diff := cmp.Diff(tt.want, pack.Keys()); diff != "" {
				t.Errorf("Build(budget=%d) keys mismatch (-want +got):\n%s", tt.budget, diff)
			}
			if len(pack.Text) > tt.budget {
				t.Errorf("Build(budget=%d) = %d bytes, over budget", tt.budget, len(pack.Text))
			}
		})
	}
}

func TestTruncationNeverCutsBookendsOrRunes(t *testing.T) {
	t.Parallel()
	secs := []Section{
		{Key: "contract", Heading: "## Contract", Body: "Rules.", Bookend: true},
		{Key: "goal", Heading: "## Goal", Body: strings.Repeat("日本語のテキスト。", 200), Required: true},
		{Key: "notes", Heading: "## Notes", Body: "droppable", DropRank: 1},
		{Key: "output", Heading: "## Output", Body: "Answer in JSON.", Bookend: true},
	}
	for budget := 85; budget < 400; budget += 7 {
		pack, err := Build(secs, Options{BudgetBytes: budget})
		if err != nil {
			t.Fatalf("Build(budget=%d) error: %v", budget, err)
		}
		if len(pack.Text) > budget {
			t.Fatalf("Build(budget=%d) = %d bytes", budget, len(pack.Text))
		}
		if !utf8.ValidString(pack.Text) {
			t.Fatalf("Build(budget=%d) split a rune: %q", budget, pack.Text)
		}
		if !strings.Contains(pack.Text, "## Contract\n\nRules.") || !strings.HasSuffix(pack.Text, "## Output\n\nAnswer in JSON.\n") {
			t.Fatalf("Build(budget=%d) cut a bookend:\n%s", budget, pack.Text)
		}
		if !strings.Contains(pack.Text, TruncatedMarker) {
			t.Fatalf("Build(budget=%d) lacks the [truncated] marker", budget)
		}
		if got := pack.Report.Sections[1].Outcome; got != Truncated {
			t.Fatalf("goal outcome = %s, want truncated", got)
		}
	}
}

func TestBudgetTooSmall(t *testing.T) {
	t.Parallel()
	secs := runnerSections("x")
	_, err := Build(secs, Options{BudgetBytes: 50})
	if baton.ErrorCode(err) != baton.Invalid {
		t.Fatalf("Build(budget=50) error = %v, want Invalid", err)
	}
	for _, want := range []string{"50 bytes is too small", "contract, goal, selected, output", "raise the budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestEmptySectionsLeftOut(t *testing.T) {
	t.Parallel()
	pack, err := Build([]Section{
		{Key: "a", Heading: "## A", Body: "a", Required: true},
		{Key: "b", Heading: "## B", Body: "  \n", Required: true},
		{Key: "c", Body: "plain"},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pack.Text != "## A\n\na\n\nplain\n" {
		t.Errorf("Text = %q", pack.Text)
	}
	if pack.Report.Sections[1].Outcome != Empty {
		t.Errorf("blank section outcome = %s, want empty", pack.Report.Sections[1].Outcome)
	}
}

func TestDeterministicAndGolden(t *testing.T) {
	t.Parallel()
	a, _ := Build(runnerSections(strings.Repeat("- n\n", 3)), Options{BudgetBytes: 300})
	b, _ := Build(runnerSections(strings.Repeat("- n\n", 3)), Options{BudgetBytes: 300})
	if a.Text != b.Text {
		t.Fatal("two builds of the same input differ")
	}
	golden.CheckString(t, "runner_tight.golden", a.Text)
}

func FuzzBuild(f *testing.F) {
	f.Add("héllo wörld", "ßßß", 40, 2)
	f.Add(strings.Repeat("日本", 50), "x", 30, 0)
	f.Fuzz(func(t *testing.T, body, other string, budget, rank int) {
		if budget < 0 || budget > 1<<16 {
			return
		}
		secs := []Section{
			{Key: "c", Body: "C", Bookend: true},
			{Key: "b", Heading: "## B", Body: body, Required: true},
			{Key: "o", Heading: "## O", Body: other, DropRank: rank},
			{Key: "e", Body: "E", Bookend: true},
		}
		pack, err := Build(secs, Options{BudgetBytes: budget})
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if budget > 0 && len(pack.Text) > budget {
			t.Fatalf("%d bytes over budget %d", len(pack.Text), budget)
		}
		if utf8.ValidString(body) && utf8.ValidString(other) && !utf8.ValidString(pack.Text) {
			t.Fatalf("rune split: %q", pack.Text)
		}
		if !strings.HasPrefix(pack.Text, "C") || !strings.HasSuffix(pack.Text, "E\n") {
			t.Fatalf("bookend lost: %q", pack.Text)
		}
	})
}
