package delivery

import (
	"github.com/baton-agent/baton/internal/golden"

	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func promptFixture() *baton.Delivery {
	d := fixture(baton.PhaseImplement, baton.StatusPending)
	d.Summary = "GitHub Issue #12: Sessions expire too early"
	d.Refs = []baton.Ref{
		{Role: baton.RoleRequest, Type: "github_issue", Label: "#12", URL: "https://github.com/octo/app/issues/12"},
		{Role: baton.RoleParent, Type: "delivery", Label: "parent, no URL"},
		{Role: baton.RoleWork, Type: "pr", Label: "octo/app#31", URL: "https://github.com/octo/app/pull/31"},
		{Role: baton.RoleReview, Type: "pr_review", Label: "review: not_pass", URL: "https://github.com/octo/app/pull/31#pullrequestreview-9"},
		{Role: baton.RoleCheck, Type: "check_run", Label: "test: failure", URL: "https://github.com/octo/app/runs/5"},
		{Role: baton.RoleReview, Type: "pr_review", Label: "rejected by ana", URL: "https://github.com/octo/app/pull/31#pullrequestreview-10"},
		{Role: baton.RoleReview, Type: "review_line", Label: "internal/auth/jwt.go:12", URL: "https://github.com/octo/app/pull/31#discussion_r11"},
	}
	return &d
}

// Every agent phase gets the same user prompt; each has its own system
// prompt. Goldens pin both.
func TestPromptGolden(t *testing.T) {
	t.Parallel()
	d := promptFixture()
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview} {
		d.Phase = p
		golden.CheckString(t, "prompt_"+string(p)+".golden.md", "# system\n"+SystemPrompt(p, "main")+"\n\n# prompt\n"+BuildPrompt(d))
	}
}

func TestBuildPromptRules(t *testing.T) {
	t.Parallel()
	d := promptFixture()
	got := BuildPrompt(d)
	want := "GitHub Issue #12: Sessions expire too early\n\n## References\n\n" +
		"- https://github.com/octo/app/issues/12\n- https://github.com/octo/app/pull/31\n" +
		"- https://github.com/octo/app/pull/31#pullrequestreview-9\n- https://github.com/octo/app/runs/5\n" +
		"- https://github.com/octo/app/pull/31#pullrequestreview-10\n" +
		"- https://github.com/octo/app/pull/31#discussion_r11 (a note on internal/auth/jwt.go:12)\n"
	if got != want {
		t.Errorf("BuildPrompt = %q, want %q", got, want)
	}
	// Filtered by role.
	if got := RefURLs(d.Refs[:5], baton.RoleWork, baton.RoleCheck); !cmp.Equal(got, []string{"https://github.com/octo/app/pull/31", "https://github.com/octo/app/runs/5"}) {
		t.Errorf("RefURLs(work, check) = %v", got)
	}
	// No URL at all: no section.
	d.Refs = []baton.Ref{{Role: baton.RoleRequest, Type: "summary", Label: "local request"}}
	if got := BuildPrompt(d); strings.Contains(got, "References") {
		t.Errorf("BuildPrompt without URLs = %q, want no References section", got)
	}
	// The plan and feedback are never injected, whatever the delivery holds.
	d.Error = "review: not_pass: add the migration"
	if got := BuildPrompt(d); strings.Contains(got, "migration") {
		t.Errorf("BuildPrompt injected the review feedback: %q", got)
	}
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview} {
		if s := SystemPrompt(p, "main"); !strings.HasSuffix(s, NonInteractive) || strings.Count(s, "\n") != 0 {
			t.Errorf("SystemPrompt(%s) = %q, want one line ending with the non-interactive directive", p, s)
		}
	}
	if !strings.Contains(SystemPrompt(baton.PhasePlan, "main"), "final message") {
		t.Error("the plan prompt must ask for the plan in the final message")
	}
}

func TestParseVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		final      string
		structured string
		want       Verdict
		code       baton.Code
	}{
		{"trailing object", "Looks fine.\n\n{\"verdict\": \"pass\", \"summary\": \"ok\", \"feedback\": \"\"}", "", Verdict{Verdict: baton.VerdictPass, Summary: "ok"}, ""},
		{"fenced", "Review:\n```json\n{\"verdict\": \"not_pass\", \"summary\": \"s\", \"feedback\": \"add {tests}\"}\n```\n", "", Verdict{baton.VerdictNotPass, "s", "add {tests}"}, ""},
		{"nested braces in strings", `x {"verdict":"not_pass","summary":"}{","feedback":"{\"a\":1}"}`, "", Verdict{baton.VerdictNotPass, "}{", `{"a":1}`}, ""},
		{"structured wins", "prose", `{"verdict":"pass","summary":"a","feedback":"b"}`, Verdict{baton.VerdictPass, "a", "b"}, ""},
		{"bad structured falls back", `{"verdict":"not_pass","summary":"s","feedback":"f"}`, `"just text"`, Verdict{baton.VerdictNotPass, "s", "f"}, ""},
		{"case", `{"verdict":" PASS ","summary":"","feedback":""}`, "", Verdict{Verdict: baton.VerdictPass}, ""},
		{"missing", "I think it is fine.", "", Verdict{}, baton.Invalid},
		{"object not last", `{"verdict":"pass"} and more words`, "", Verdict{}, baton.Invalid},
		{"no verdict field", `{"summary":"s"}`, "", Verdict{}, baton.Invalid},
		{"unknown verdict", `{"verdict":"maybe"}`, "", Verdict{}, baton.Invalid},
		{"wrong type", `{"verdict":true}`, "", Verdict{}, baton.Invalid},
		{"empty", "", "", Verdict{}, baton.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVerdict(tt.final, []byte(tt.structured))
			if c := baton.ErrorCode(err); c != tt.code {
				t.Fatalf("ParseVerdict = %v, want code %q", err, tt.code)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseVerdict (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseVerdict(f *testing.F) {
	f.Add(`done {"verdict":"pass","summary":"s","feedback":"f"}`, "")
	f.Add("```json\n{\"verdict\":\"not_pass\"}\n```", "")
	f.Add("{{{{{{}", `{"verdict":1}`)
	f.Add(strings.Repeat("{", 2000)+"}", "")
	f.Fuzz(func(t *testing.T, final, structured string) {
		v, err := ParseVerdict(final, []byte(structured))
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseVerdict error code %s, want Invalid", baton.ErrorCode(err))
			}
			return
		}
		if v.Verdict != baton.VerdictPass && v.Verdict != baton.VerdictNotPass {
			t.Fatalf("ParseVerdict accepted verdict %q", v.Verdict)
		}
		if strings.TrimSpace(structured) == "" && !strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(final), "```")), "}") {
			t.Fatalf("ParseVerdict(%q) found a verdict in a message that does not end with an object", final)
		}
	})
}
