package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
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

// `baton-hook --version` names the release it came from, as `baton
// version` does, so a companion left behind by an older install can be
// told from the one beside baton.
func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds baton-hook")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "baton-hook")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=1.2.3 -X main.commit="+commit, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	want := "baton-hook 1.2.3 (commit 0123456789ab, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if err != nil || string(out) != want {
		t.Errorf("baton-hook --version = %q, %v; want %q", out, err, want)
	}
}
