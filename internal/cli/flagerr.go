package cli

import (
	"errors"
	"strconv"

	"github.com/spf13/pflag"
)

// flagError turns a flag that failed to parse into a usage error saying
// what the flag takes. pflag's own text ends in how Go's parser failed
// ("strconv.ParseInt: parsing \"many\": invalid syntax"), which tells a
// person nothing they can act on; the flag's type says what was wanted.
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return usageError("%s", err)
	}
	fl := bad.GetFlag()
	var want string
	switch fl.Value.Type() {
	case "int", "int8", "int16", "int32", "int64":
		want = "a whole number"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number, 0 or more"
	case "float32", "float64":
		want = "a number"
	case "duration":
		want = "a duration such as 90s, 5m or 1h30m"
	case "bool":
		want = "true or false"
	default:
		// baton's own flag types (sizes) already say what they take.
		return usageError("--%s: %v", fl.Name, bad.Unwrap())
	}
	if errors.Is(err, strconv.ErrRange) {
		return usageError("--%s takes %s, and %q is out of range", fl.Name, want, bad.GetValue())
	}
	return usageError("--%s takes %s, got %q", fl.Name, want, bad.GetValue())
}
