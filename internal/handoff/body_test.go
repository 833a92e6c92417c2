package handoff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestCanonicalHeading(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Intent":                     baton.SectionIntent,
		"next prompt":                baton.SectionNextPrompt,
		"Next Prompt (Draft)":        baton.SectionNextPrompt,
		"NEXT-PROMPT":                baton.SectionNextPrompt,
		"Exit criteria":              baton.SectionValidators,
		"Validators / Exit Criteria": baton.SectionValidators,
		"Questions":                  baton.SectionOpenQuestions,
		"relevant files":             baton.SectionRelevantFiles,
		"  Rollout plan ":            "Rollout plan",
	}
	for in, want := range tests {
		if got := CanonicalHeading(in); got != want {
			t.Errorf("CanonicalHeading(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseBody(t *testing.T) {
	t.Parallel()
	lead, secs := ParseBody("lead text\n\n## Next Prompt\nfirst\n## Plan\n1. a\n## next prompt (draft)\nsecond\n## Extra\n```\n## not a heading\n```\n")
	if lead != "lead text" {
		t.Errorf("lead = %q", lead)
	}
	want := []baton.Section{
		{Heading: baton.SectionNextPrompt, Body: "first\n\nsecond"},
		{Heading: baton.SectionPlan, Body: "1. a"},
		{Heading: "Extra", Body: "```\n## not a heading\n```"},
	}
	if diff := cmp.Diff(want, secs); diff != "" {
		t.Errorf("sections mismatch (-want +got):\n%s", diff)
	}
}

func TestBulletPaths(t *testing.T) {
	t.Parallel()
	got := bulletPaths("- `internal/a.go` — the signer\n* b.go, because\n- [x] c/d.go\n- (none)\nnot a bullet\n  - `e f.go`\n")
	if diff := cmp.Diff([]string{"internal/a.go", "b.go", "c/d.go", "e f.go"}, got); diff != "" {
		t.Errorf("bulletPaths mismatch (-want +got):\n%s", diff)
	}
}

func FuzzParseBody(f *testing.F) {
	f.Add("## Intent\nx\n## Next Prompt\ny\n")
	f.Add("lead\n```\n## fenced\n```\n## A\n### Confirmed\n- `a`\n")
	f.Fuzz(func(t *testing.T, md string) {
		lead, secs := ParseBody(md)
		seen := map[string]bool{}
		for _, s := range secs {
			if seen[s.Heading] {
				t.Fatalf("heading %q appears twice after merging", s.Heading)
			}
			seen[s.Heading] = true
			if s.Body != strings.TrimSpace(s.Body) {
				t.Fatalf("body of %q not trimmed: %q", s.Heading, s.Body)
			}
		}
		if lead != strings.TrimSpace(lead) {
			t.Fatalf("lead not trimmed: %q", lead)
		}
		_, subs := subsections(md)
		for _, v := range subs {
			_ = bulletPaths(v)
		}
	})
}
