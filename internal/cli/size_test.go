package cli

import (
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"40000": 40000, "40KB": 40000, "40kb": 40000, "40KiB": 40960, "40k": 40000,
		"1MB": 1000000, "1MiB": 1 << 20, "1.5MiB": 3 << 19, " 2 KB ": 2000, "0": 0, "512B": 512,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KB", "1KBB", "-1", "+1", "1e3", "0x10", "1_000", "ten", "NaN", "Inf", "3GiB", "1.5.2MB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		} else if strings.Contains(err.Error(), "strconv") {
			t.Errorf("parseSize(%q) shows a Go parser error: %v", in, err)
		}
	}
}

// The budget flags take sizes with units, and a bad one is explained.
func TestBudgetFlagTakesUnits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "carry on", "--next-prompt", "go on")
	if r := e.ok("", "", "pickup", "--budget", "1KB"); len(r.stdout) > 1000 {
		t.Errorf("pickup --budget 1KB printed %d bytes", len(r.stdout))
	}
	r := e.run("", "", "pickup", "--budget", "lots")
	if r.code != 2 || !strings.Contains(r.stderr, `"lots" is not a size`) || strings.Contains(r.stderr, "strconv") {
		t.Errorf("pickup --budget lots = %d\nstderr: %s", r.code, r.stderr)
	}
}

var sizeShape = regexp.MustCompile(`^([0-9]+)(kib|mib|gib|kb|mb|gb|k|m|g|b)?$`)

// FuzzParseSize checks parseSize against a reference in big integers for
// whole numbers with a unit, and that nothing else it accepts is out of
// range or a Go parser's error.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"40000", "40KB", "40KiB", "1MB", "1.5MiB", "-1", "1e3", "999999999999999999999", "2147483647", "2GiB", " 7 k"} {
		f.Add(s)
	}
	factors := map[string]int64{"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1e6, "mb": 1e6, "mib": 1 << 20, "g": 1e9, "gb": 1e9, "gib": 1 << 30}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSize(s)
		if err != nil {
			if strings.Contains(err.Error(), "strconv") {
				t.Fatalf("parseSize(%q): a Go parser error reached the user: %v", s, err)
			}
		} else if got < 0 || got > math.MaxInt32 {
			t.Fatalf("parseSize(%q) = %d, out of range", s, got)
		}
		m := sizeShape.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
		if m == nil || strings.ContainsAny(strings.TrimSpace(s), " \t") {
			return
		}
		n, _ := new(big.Int).SetString(m[1], 10)
		want := n.Mul(n, big.NewInt(factors[m[2]]))
		if want.Cmp(big.NewInt(math.MaxInt32)) > 0 {
			if err == nil {
				t.Fatalf("parseSize(%q) = %d, want too large", s, got)
			}
			return
		}
		if err != nil || int64(got) != want.Int64() {
			t.Fatalf("parseSize(%q) = %d, %v; want %s", s, got, err, want)
		}
	})
}
