package loop_test

import (
	"fmt"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/loop"
)

// Decide is what a Stop hook does to the foreground loop: block with the
// loop prompt until the agent states a promise inside <promise> tags.
func ExampleDecide() {
	l := &baton.Loop{
		ID: "fix-tests", Status: baton.LoopActive, Prompt: "Run go test ./... and fix one failure.",
		CompletionPromises: []string{"DONE"}, MaxIterations: 5,
	}
	for _, msg := range []string{
		"Fixed TestLogin; two failures left.",
		"DONE", // a bare word is not a promise
		"All green. <promise>DONE</promise>",
	} {
		d := loop.Decide(l, loop.Stop{SessionID: "s1", Message: msg, Known: true})
		fmt.Printf("%s: %s\n", d.Action, d.Message)
	}
	fmt.Println(l.Status, l.Outcome)
	// Output:
	// block: baton loop fix-tests: iteration 1/5 — finish with <promise>DONE</promise>
	// block: baton loop fix-tests: iteration 2/5 — finish with <promise>DONE</promise>
	// allow: baton loop fix-tests: done (DONE) at iteration 2/5
	// done DONE
}
