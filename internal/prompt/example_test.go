package prompt_test

import (
	"fmt"

	"github.com/baton-agent/baton/internal/prompt"
)

// Build renders sections in order under a byte budget. Droppable sections
// go first, lowest DropRank first; then the last section that is not a
// bookend is cut on a rune boundary. Bookends are never touched.
func ExampleBuild() {
	p, err := prompt.Build([]prompt.Section{
		{Key: "task", Heading: "## Task", Body: "Fix the flaky login test.", Required: true},
		{Key: "history", Heading: "## History", Body: "Attempt 1 raised the timeout; it still fails.", DropRank: 1},
		{Key: "notes", Heading: "## Notes", Body: "The test sleeps 100ms before asserting on the session cookie.", DropRank: 2},
		{Key: "output", Heading: "## Output", Body: "Reply with a JSON status.", Bookend: true},
	}, prompt.Options{BudgetBytes: 150})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Text)
	for _, s := range p.Report.Sections {
		fmt.Println(s.Key, s.Outcome)
	}
	// Output:
	// ## Task
	//
	// Fix the flaky login test.
	//
	// ## Notes
	//
	// The test sleeps 100ms before asserting on the session cookie.
	//
	// ## Output
	//
	// Reply with a JSON status.
	//
	// task kept
	// history dropped
	// notes kept
	// output kept
}
