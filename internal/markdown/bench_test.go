package markdown_test

import (
	"os"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/markdown"
)

// BenchmarkRender renders a plan at MaxSource: an ordinary one (the
// table plan repeated), and the slowest hostile one found within the
// bounds, lines of MaxLine unclosed links, whose parse grows with the
// square of a line's length.
func BenchmarkRender(b *testing.B) {
	plan, err := os.ReadFile("testdata/table.md")
	if err != nil {
		b.Fatal(err)
	}
	fill := func(unit string) string {
		return strings.Repeat(unit, markdown.MaxSource/len(unit))
	}
	for _, c := range []struct{ name, src string }{
		{"plan-64KiB", fill(string(plan) + "\n")},
		{"unclosed-links-64KiB", fill(strings.Repeat("[a](", markdown.MaxLine/4-1) + "\n")},
		{"nested-quotes-32", fill(strings.Repeat("> ", markdown.MaxNesting) + "x\n")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.src)))
			for b.Loop() {
				if _, err := markdown.Render(c.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
