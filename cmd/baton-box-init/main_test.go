package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The init links the box's init, egress's side of the box's network and
// what they import, nothing of the rest of baton: every package it links
// is paid for at every box's start, a dozen times a delivery.
func TestInitLinksOnlyTheInit(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/baton-agent/baton"
	allowed := map[string]bool{
		mod: true, mod + "/internal/sandbox": true, mod + "/internal/egress": true,
		mod + "/internal/netpolicy": true, mod + "/internal/buildinfo": true, mod + "/cmd/baton-box-init": true,
	}
	for _, d := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(d, mod) && !allowed[d]:
			t.Errorf("baton-box-init links %s", d)
		case d == "regexp" || strings.HasPrefix(d, "modernc.org/") || strings.HasPrefix(d, "github.com/riverqueue/") ||
			strings.HasPrefix(d, "github.com/jackc/") || strings.HasPrefix(d, "github.com/spf13/"):
			t.Errorf("baton-box-init links %s", d)
		}
	}
}

// Run by hand, it says what it is and that it is not to be run so.
func TestInitByHand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds baton-box-init")
	}
	bin := t.TempDir() + "/baton-box-init"
	if out, err := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=1.2.3", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "baton-box-init 1.2.3 (") {
		t.Errorf("baton-box-init --version = %q, %v", out, err)
	}
	cmd := exec.Command(bin)
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(b), "not run by hand") {
		t.Errorf("baton-box-init by hand: exit %d (%v), %q; want exit 2 and a word on what it is", code, err, b)
	}
}
