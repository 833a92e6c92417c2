package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// sizeUnits are the suffixes a size flag takes: SI (KB = 1000) and IEC
// (KiB = 1024), in any case; a bare number is bytes.
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000},
	{"b", 1},
}

// parseSize reads a size as people write one: 40000, 40KB, 40KiB, 1MB,
// 1.5MiB. Errors say what is accepted, never how a Go parser failed.
func parseSize(s string) (int, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	factor := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, factor = strings.TrimSpace(num), u.factor
			break
		}
	}
	bad := fmt.Errorf("%q is not a size: give bytes (40000) or a number with a unit (40KB, 40KiB, 1MB, 1MiB)", s)
	if t == "" || strings.ContainsAny(t, "+-eExX_") {
		return 0, bad
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n > math.MaxInt32/factor {
			return 0, fmt.Errorf("%q is too large", s)
		}
		return int(n * factor), nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	v := f * float64(factor)
	if v > math.MaxInt32 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int(v), nil
}

// sizeValue is a pflag.Value of a size in bytes.
type sizeValue struct{ n *int }

func (v sizeValue) String() string {
	if v.n == nil {
		return "0"
	}
	return strconv.Itoa(*v.n)
}

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

func (v sizeValue) Type() string { return "size" }

// sizeVar defines a size flag: bytes, or a number with a unit.
func sizeVar(fl *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fl.Var(sizeValue{p}, name, usage)
}
