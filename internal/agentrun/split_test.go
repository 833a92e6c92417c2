package agentrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"./agent.sh --fast", []string{"./agent.sh", "--fast"}},
		{"  a \t b\n c  ", []string{"a", "b", "c"}},
		{`a "b c" 'd e'`, []string{"a", "b c", "d e"}},
		{`'it'\''s'`, []string{"it's"}},
		{`"say \"hi\" \$HOME \\ \n"`, []string{`say "hi" $HOME \ \n`}},
		{`a\ b c`, []string{"a b", "c"}},
		{`$HOME ~ *.go`, []string{"$HOME", "~", "*.go"}},
		{`""`, []string{""}},
		{`a''b`, []string{"ab"}},
		{"a\\\nb", []string{"ab"}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.in)
		if err != nil {
			t.Errorf("SplitArgs(%q) error: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SplitArgs(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, bad := range []string{`"open`, `'open`, `trailing\`} {
		if got, err := SplitArgs(bad); err == nil {
			t.Errorf("SplitArgs(%q) = %q, want an error", bad, got)
		}
	}
}

// FuzzSplitArgs checks that SplitArgs never panics and that QuoteArgs and
// SplitArgs round-trip any argument list.
func FuzzSplitArgs(f *testing.F) {
	f.Add("./agent.sh --fast", "two words")
	f.Add(`'it'\''s' "a\"b"`, "")
	f.Add("\\\n", "$HOME\t*")
	f.Fuzz(func(t *testing.T, line, extra string) {
		args, err := SplitArgs(line)
		if err != nil {
			return
		}
		args = append(args, extra)
		again, err := SplitArgs(QuoteArgs(args))
		if err != nil {
			t.Fatalf("SplitArgs(QuoteArgs(%q)) error: %v", args, err)
		}
		if diff := cmp.Diff(args, again); diff != "" {
			t.Fatalf("QuoteArgs round trip of %q mismatch (-want +got):\n%s", args, diff)
		}
	})
}
