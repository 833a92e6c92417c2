package cli

import (
	"strings"
	"testing"
)

// A number flag given something else says what it takes, never how Go's
// parser failed.
func TestBadNumberSaysWhatIsWanted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"files", "--limit", "many"}, `--limit takes a whole number, got "many"`},
		{[]string{"pickup", "--budget-tokens", "lots"}, `--budget-tokens takes a whole number, got "lots"`},
		{[]string{"loop", "start", "--max-iterations", "lots", "go on"}, `--max-iterations takes a whole number, got "lots"`},
		{[]string{"delivery", "log", "--run", "first", "d-1"}, `--run takes a whole number, got "first"`},
		{[]string{"files", "--limit=99999999999999999999"}, `--limit takes a whole number, and "99999999999999999999" is out of range`},
		{[]string{"worker", "--lease", "soon"}, `--lease takes a duration such as 90s, 5m or 1h30m, got "soon"`},
		{[]string{"files", "--json=maybe"}, `--json takes true or false, got "maybe"`},
	} {
		r := e.run("", "", c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "strconv") || strings.Contains(r.stderr, "time:") {
			t.Errorf("baton %s = %d, stderr %q, want exit 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}
