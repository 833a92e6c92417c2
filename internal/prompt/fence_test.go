package prompt

import "testing"

func TestFence(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":            "```",
		"+```go\n+x\n+```": "````",
		" ````` five":      "``````",
	} {
		if got := Fence(in); got != want {
			t.Errorf("Fence(%q) = %q, want %q", in, got, want)
		}
	}
}
