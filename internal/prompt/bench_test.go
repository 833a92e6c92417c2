package prompt

import (
	"fmt"
	"strings"
	"testing"
)

// hundredSections is 100 sections holding 4 MB in all, a few of them
// bookends and required, the rest droppable.
func hundredSections() []Section {
	body := strings.Repeat("Lorem ipsum dolor sit amet, ünïcödé text so cuts land mid-rune. ", 40*1024/64)
	secs := make([]Section, 100)
	for i := range secs {
		secs[i] = Section{Key: fmt.Sprintf("s%02d", i), Heading: fmt.Sprintf("## Section %d", i), Body: body, DropRank: i % 7}
	}
	secs[0].Bookend, secs[99].Bookend = true, true
	secs[0].Body, secs[99].Body = "contract", "output rules"
	secs[50].Required = true // the one section that is cut when the rest is dropped
	return secs
}

func BenchmarkBuild100Sections4MB(b *testing.B) {
	secs := hundredSections()
	total := 0
	for _, s := range secs {
		total += len(s.Body)
	}
	for _, budget := range []int{DefaultBudgetBytes, 1 << 30} {
		b.Run(fmt.Sprintf("budget=%d", budget), func(b *testing.B) {
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(secs, Options{BudgetBytes: budget}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
