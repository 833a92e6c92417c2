package goaltree

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestParseGoalFile(t *testing.T) {
	t.Parallel()
	in := "---\nid: jwt-auth\nnext: execute\nowner: me\n---\n# Add JWT authentication\n\nProtect the API with JWT tokens.\n\n## Context\nThe API is in api/.\n\n## Acceptance\n- POST /login returns a token\n* protected routes\n  need a valid token\n- [ ] tokens expire after 24h\n\n```\n## not a heading\n```\n"
	got, err := ParseGoalFile([]byte(in))
	if err != nil {
		t.Fatalf("ParseGoalFile error: %v", err)
	}
	want := &GoalFile{
		ID: "jwt-auth", Next: nextExecute, Title: "Add JWT authentication",
		Goal:       "Protect the API with JWT tokens.\n\n## Context\nThe API is in api/.",
		Acceptance: []string{"POST /login returns a token", "protected routes need a valid token", "tokens expire after 24h"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseGoalFile mismatch (-want +got):\n%s", diff)
	}
	plain, err := ParseGoalFile([]byte("# Title only\r\n"))
	if err != nil || plain.Title != "Title only" || plain.ID != "" || plain.Goal != "" || len(plain.Acceptance) != 0 {
		t.Errorf("ParseGoalFile(title only) = %+v, %v", plain, err)
	}
}

func TestParseGoalFileErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"no title here\n",
		"---\nid: ../etc\n---\n# T\n",
		"---\nid: [a, b]\n---\n# T\n",
		"---\nnext: done\n---\n# T\n",
		"---\nid: x\n# T\n",
		"# " + strings.Repeat("t", 300) + "\n",
	} {
		if _, err := ParseGoalFile([]byte(in)); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseGoalFile(%q) = %v, want an Invalid error", in, err)
		}
	}
}

func FuzzParseGoalFile(f *testing.F) {
	f.Add([]byte("---\nid: a\n---\n# T\n\ngoal\n\n## Acceptance\n- x\n"))
	f.Add([]byte("# T\n## Acceptance Criteria\n- [x] done\n  more\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGoalFile(data)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseGoalFile error %v is not Invalid", err)
			}
			return
		}
		if strings.TrimSpace(g.Title) == "" || (g.ID != "" && !baton.ValidID(g.ID)) || (g.Next != "" && !g.Next.Valid()) {
			t.Fatalf("ParseGoalFile accepted %+v", g)
		}
		for _, a := range g.Acceptance {
			if strings.TrimSpace(a) == "" {
				t.Fatalf("ParseGoalFile returned a blank acceptance item in %+v", g)
			}
		}
	})
}
