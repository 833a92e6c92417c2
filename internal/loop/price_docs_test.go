package loop

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// docs/hooks.md shows the price table the code holds, row for row, so
// what a user reads as baton's price is the one it counts.
func TestDocsPriceTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Prices\n")
	if !ok {
		t.Fatal("docs/hooks.md has no Prices section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	var got []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			got = append(got, line)
		}
	}
	models := make([]string, 0, len(DefaultPrices))
	for m := range DefaultPrices {
		models = append(models, m)
	}
	sort.Strings(models)
	want := make([]string, len(models))
	for i, m := range models {
		p := DefaultPrices[m]
		want[i] = "| `" + m + "` | " + usd(p.Input) + " | " + usd(p.Output) + " | " + usd(p.CacheRead) + " | " + usd(p.CacheWrite) + " |"
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/hooks.md's price table differs from DefaultPrices; it should read:\n%s", strings.Join(want, "\n"))
	}
	if !strings.Contains(section, PricesChecked) {
		t.Errorf("docs/hooks.md's price table does not say it was read on %s", PricesChecked)
	}
}

// usd is a price as the table shows it ("—" for none).
func usd(v float64) string {
	if v == 0 {
		return "—"
	}
	return "$" + strconv.FormatFloat(v, 'f', -1, 64)
}
