package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The companion links the hook's code and nothing that only the rest of
// baton needs: each of these costs every hook its start-up pages. The
// sandbox and internal/proc are the hook's own: the Stop hook runs a
// loop's verify commands, confined.
func TestHookBinaryLinksOnlyTheHook(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{
		"modernc.org/sqlite", "github.com/riverqueue/river", "github.com/jackc/pgx/v5",
		"github.com/google/go-github/v92/github", "github.com/modelcontextprotocol/go-sdk/mcp",
		"github.com/pkoukk/tiktoken-go", "github.com/spf13/cobra", "net/http", "net",
		"github.com/baton-agent/baton/internal/delivery", "github.com/baton-agent/baton/internal/web",
		"github.com/google/uuid", "github.com/baton-agent/baton/internal/search",
	} {
		for _, d := range deps {
			if d == banned {
				t.Errorf("baton-hook links %s", banned)
			}
		}
	}
}
