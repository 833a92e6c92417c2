package release_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testenv"
)

// The deb and rpm, installed on clean Debian systems booted with systemd
// in a container, as an administrator installs them: the package creates
// the baton user, its units pass systemd-analyze verify and start after
// docs/deploy.md's recipe, a delivery runs through them, an upgrade
// restarts them, and a removal stops them and keeps the data. No
// rpm-based distribution is reachable here: the rpm is installed by rpm
// itself (Debian's, --nodeps) on Debian with systemd 257, which runs its
// scripts as Fedora's rpm would; docs/release.md says what that leaves
// untested.

// pkgCase is one package on one system.
type pkgCase struct {
	format string // deb or rpm
	root   debianRoot
}

func (c pkgCase) name() string { return c.format + " on " + c.root.suite }

// installCmd and removeCmd are how an administrator installs and removes
// the package file at path.
func (c pkgCase) installCmd(path string) string {
	if c.format == "rpm" {
		return "rpm -U --replacepkgs " + rpmFlags + " " + path
	}
	return "dpkg -i " + path
}

func (c pkgCase) removeCmd() string {
	if c.format == "rpm" {
		return "rpm -e " + rpmFlags + " baton"
	}
	return "dpkg -r baton"
}

// rpmFlags: nothing on Debian provides what the rpm requires, and rpm
// 4.20's unshare plugin, which runs scriptlets in namespaces of their
// own, needs a capability the container lacks (a host has it).
const rpmFlags = `--nodeps --define "__transaction_unshare %{nil}"`

func TestPackages(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the packages are Linux's")
	}
	need(t, "podman")
	r := readRelease(t)
	for _, c := range []pkgCase{
		{"deb", systemdRoots[0]},
		{"deb", systemdRoots[1]},
		{"rpm", systemdRoots[0]},
	} {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			testPackage(t, r, c)
		})
	}
	t.Run("deb without systemd", func(t *testing.T) {
		t.Parallel()
		testPackageWithoutSystemd(t, r)
	})
}

// pkgFile is the snapshot's package of format.
func pkgFile(t *testing.T, r release, format string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.dist, "*."+format))
	if len(files) != 1 {
		t.Fatalf("the snapshot holds %v, want one %s", files, format)
	}
	return files[0]
}

// system is a container running systemd as its init.
type system struct {
	t    *testing.T
	name string
}

// boot starts image with systemd as pid 1, the snapshot's dist mounted
// at /dist, and waits until systemd has started everything it starts.
func boot(t *testing.T, image, dist string) system {
	t.Helper()
	name := fmt.Sprintf("baton-test-system-%d", freePort(t))
	mustPodman(t, "run", "-d", "--name", name, "--systemd=always", "--network", "none", "-v", dist+":/dist:ro", image, "/sbin/init")
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", "-t", "0", name) })
	s := system{t, name}
	// systemctl can ask only once systemd listens on its socket, shortly
	// after the container starts: until then it says it cannot connect,
	// or "offline" before systemd has made /run/systemd/system (seen on
	// a fresh machine, its image cold). Then --wait returns once start-up
	// is done: "running", or "degraded" when a unit of the base system
	// failed, which is not this test's concern.
	var out string
	testenv.Until(60*time.Second, nil, func() bool {
		out, _ = podman(t, "exec", name, "systemctl", "is-system-running", "--wait")
		return !strings.Contains(out, "Failed to connect") && strings.TrimSpace(out) != "offline"
	})
	if !strings.Contains(out, "running") && !strings.Contains(out, "degraded") {
		logs, _ := podman(t, "logs", name)
		t.Fatalf("systemd did not come up in the container: %q\n%s", out, tail(logs))
	}
	return s
}

// sh runs a script in the system as root.
func (s system) sh(script string) (string, error) {
	return podman(s.t, "exec", s.name, "sh", "-euc", script)
}

func (s system) mustSh(script string) string {
	s.t.Helper()
	out, err := s.sh(script)
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

// journal is what a unit logged.
func (s system) journal(unit string) string {
	out, _ := s.sh("journalctl --no-pager -n 60 -u " + unit)
	return out
}

// waitReady waits for baton serve in the system to answer /readyz: it
// starts in the background of `systemctl start`, with no readiness
// notice to wait on.
func (s system) waitReady() {
	s.t.Helper()
	if !testenv.Until(30*time.Second, nil, func() bool {
		_, err := s.sh("baton healthcheck --ready")
		return err == nil
	}) {
		s.t.Fatalf("baton-serve did not answer /readyz within 30s\n%s", s.journal("baton-serve"))
	}
}

func testPackage(t *testing.T, r release, c pkgCase) {
	pkg := "/dist/" + filepath.Base(pkgFile(t, r, c.format))
	s := boot(t, c.root.image(t), r.dist)

	s.mustSh(c.installCmd(pkg))
	passwd := s.mustSh("getent passwd baton")
	if f := strings.Split(strings.TrimSpace(passwd), ":"); len(f) != 7 || f[5] != "/var/lib/baton" || f[6] != "/usr/sbin/nologin" {
		t.Errorf("the baton user is %q, want a system user with home /var/lib/baton and no login", passwd)
	}
	if out, err := s.sh("systemd-analyze verify baton-serve.service baton-worker.service 2>&1"); err != nil || strings.Contains(out, "baton") {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, unit := range []string{"baton-serve", "baton-worker"} {
		if out, _ := s.sh("systemctl is-enabled " + unit); strings.TrimSpace(out) != "disabled" {
			t.Errorf("after install %s is %q, want disabled until it is configured", unit, out)
		}
	}
	checkHooks(t, r, func(script string) (string, error) { return s.sh(script) })

	// docs/deploy.md's first start of the packaged services, as written.
	s.mustSh("sudo() { \"$@\"; }\n" + docsBlock(t, "<!-- recipe: packaged services -->"))
	s.waitReady()
	for _, unit := range []string{"baton-serve", "baton-worker"} {
		if out, _ := s.sh("systemctl is-active " + unit); strings.TrimSpace(out) != "active" {
			t.Fatalf("%s is %q\n%s", unit, out, s.journal(unit))
		}
		if user := strings.TrimSpace(s.mustSh("stat -c %U /proc/$(systemctl show -P MainPID " + unit + ")")); user != "baton" {
			t.Errorf("%s runs as %q, want baton", unit, user)
		}
	}
	if mode := strings.TrimSpace(s.mustSh("stat -c '%a %U' /var/lib/baton")); mode != "700 baton" {
		t.Errorf("/var/lib/baton is %q, want 700 baton", mode)
	}

	// A delivery through the worker service, created by the baton user
	// on the machine: the worker runs it with the stand-in agent, on the
	// SQLite database both services keep in /var/lib/baton.
	s.mustSh(`mkdir -p /srv/app
cat > /srv/agent.sh <<'EOF'
` + standIn + `EOF
chmod 0755 /srv/agent.sh
cd /srv/app
git init -q -b main
echo '# app' > README.md
git add -A
git -c user.name=t -c user.email=t@example.com commit -qm initial
chown -R baton:baton /srv/app
printf '%s\n' GIT_AUTHOR_NAME=baton GIT_AUTHOR_EMAIL=baton@example.com GIT_COMMITTER_NAME=baton GIT_COMMITTER_EMAIL=baton@example.com >> /etc/baton/agent.env
systemctl restart baton-worker`)
	as := "runuser -u baton -- env HOME=/var/lib/baton BATON_DATA_DIR=/var/lib/baton "
	var created struct {
		Delivery struct{ ID string } `json:"delivery"`
	}
	out := s.mustSh(as + "baton delivery create --repo /srv/app --summary 'Add a greeting' --checkpoints none --agent command:/srv/agent.sh --json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Delivery.ID == "" {
		t.Fatalf("baton delivery create --json: %v\n%s", err, out)
	}
	id := created.Delivery.ID
	// watch returns when the delivery waits for a person, fails or closes.
	_, _ = s.sh("cd /srv/app && timeout 120 " + as + "baton delivery watch " + id)
	show := s.mustSh("cd /srv/app && " + as + "baton delivery show " + id + " --json")
	var shown struct {
		Delivery deliveryState `json:"delivery"`
	}
	if err := json.Unmarshal([]byte(show), &shown); err != nil || shown.Delivery.Phase != "close" || shown.Delivery.RunStatus != "succeeded" {
		t.Fatalf("the delivery did not close (%v):\n%s\n%s", err, tail(show), s.journal("baton-worker"))
	}
	if got := s.mustSh("runuser -u baton -- git -C /srv/app show main:hello.txt"); got != "hello\n" {
		t.Errorf("main:hello.txt = %q", got)
	}

	// An upgrade (the same package again) restarts the running services,
	// so they run the new binary.
	pid := s.mustSh("systemctl show -P MainPID baton-serve")
	s.mustSh(c.installCmd(pkg))
	s.waitReady()
	if again := s.mustSh("systemctl show -P MainPID baton-serve"); again == pid {
		t.Errorf("the upgrade left baton-serve running its old process (pid %s)", strings.TrimSpace(pid))
	}

	// Removal stops and disables the services and keeps the user and the
	// data.
	s.mustSh(c.removeCmd())
	for _, unit := range []string{"baton-serve", "baton-worker"} {
		if out, _ := s.sh("systemctl is-active " + unit); strings.TrimSpace(out) == "active" {
			t.Errorf("after removal %s is still active", unit)
		}
	}
	if out, err := s.sh("ls /etc/systemd/system/multi-user.target.wants/ | grep baton || true; test ! -e /usr/bin/baton && test ! -e /usr/bin/baton-hook && echo gone"); err != nil || strings.TrimSpace(out) != "gone" {
		t.Errorf("after removal: %v %q, want no enabled unit and no binaries", err, out)
	}
	if _, err := s.sh("getent passwd baton && test -s /var/lib/baton/baton.db"); err != nil {
		t.Errorf("removal took the baton user or /var/lib/baton/baton.db with it")
	}
}

// On a system without systemd (a container image), the package makes the
// same user by hand.
func testPackageWithoutSystemd(t *testing.T, r release) {
	pkg := "/dist/" + filepath.Base(pkgFile(t, r, "deb"))
	out := mustPodman(t, "run", "--rm", "-v", r.dist+":/dist:ro", imageBase.image(t), "sh", "-euc", "dpkg -i "+pkg+" >/dev/null; getent passwd baton; command -v systemd-sysusers || echo none")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "none" {
		t.Fatalf("the system has systemd-sysusers after all, or the install failed:\n%s", out)
	}
	f := strings.Split(lines[len(lines)-2], ":")
	if len(f) != 7 || f[0] != "baton" || f[4] != "baton services" || f[5] != "/var/lib/baton" || f[6] != "/usr/sbin/nologin" {
		t.Errorf("the baton user made without systemd is %q, not what baton.sysusers declares", lines[len(lines)-2])
	}
}
