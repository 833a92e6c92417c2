package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel"},
		{"a release", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"go build in a checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125035230-1614ed0005e5+dirty"}}, "v0.0.0-20261125035230-1614ed0005e5+dirty"},
		{"a commit but no version", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "1614ed0005e5f68eff10c780ac573f874f9e199e", "vcs.time", "2026-11-25T03:52:30Z", "vcs.modified", "true")},
			"devel 1614ed0005e5+dirty, committed 2026-11-25T03:52:30Z"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (no commit recorded: built by go run or with -buildvcs=false)"},
	} {
		if got := From(c.bi); got != c.want {
			t.Errorf("%s: From = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSame(t *testing.T) {
	t.Parallel()
	parse := func(s string) *debug.BuildInfo {
		// ParseBuildInfo leaves the go line to the binary's reader.
		goLine, rest, _ := strings.Cut(s, "\n")
		bi, err := debug.ParseBuildInfo(rest)
		if err != nil {
			t.Fatal(err)
		}
		bi.GoVersion = strings.TrimPrefix(goLine, "go\t")
		return bi
	}
	const release = "go\tgo1.26.8\npath\tgithub.com/baton-agent/baton/cmd/baton\nmod\tgithub.com/baton-agent/baton\tv1.4.0\th1:abc=\n" +
		"dep\tgolang.org/x/sys\tv0.30.0\th1:sys=\ndep\tmodernc.org/sqlite\tv1.0.0\th1:sql=\n" +
		"build\t-ldflags=\"-s -w -X main.version=1.4.0\"\nbuild\tCGO_ENABLED=0\nbuild\tGOOS=linux\n"
	const checkout = "go\tgo1.26.8\npath\tgithub.com/baton-agent/baton/cmd/baton\nmod\tgithub.com/baton-agent/baton\tv0.0.0-20261129211500-0123456789ab\t\n" +
		"dep\tgolang.org/x/sys\tv0.30.0\th1:sys=\n" +
		"build\tCGO_ENABLED=0\nbuild\tvcs=git\nbuild\tvcs.revision=0123456789ab0123456789ab0123456789ab0123\nbuild\tvcs.modified=false\n"
	init := func(s string) string { return strings.Replace(s, "cmd/baton\n", "cmd/baton-box-init\n", 1) }
	for _, c := range []struct {
		name        string
		self, other string
		want        string // "" when the same
	}{
		{"a release's init", release, init(strings.Replace(release, "dep\tmodernc.org/sqlite\tv1.0.0\th1:sql=\n", "", 1)), ""},
		{"a clean checkout's init", checkout, init(checkout), ""},
		{"an older release", release, strings.Replace(init(release), "v1.4.0\th1:abc=", "v1.3.9\th1:old=", 1), "module github.com/baton-agent/baton v1.3.9"},
		{"the same version, another sum", release, strings.Replace(init(release), "h1:abc=", "h1:forged=", 1), "module"},
		{"another module", release, strings.ReplaceAll(init(release), "github.com/baton-agent/baton", "example.com/evil"), "module example.com/evil"},
		{"another toolchain", release, strings.Replace(init(release), "go1.26.8", "go1.26.7", 1), "built by go1.26.7"},
		{"other ldflags", release, strings.Replace(init(release), "version=1.4.0", "version=1.3.9", 1), "-ldflags"},
		{"a setting of its own", release, init(release) + "build\t-race=true\n", "other settings"},
		{"another dependency version", release, strings.Replace(init(release), "golang.org/x/sys\tv0.30.0\th1:sys=", "golang.org/x/sys\tv0.29.0\th1:old=", 1), "dependency golang.org/x/sys v0.29.0"},
		{"a dependency baton does not link", release, init(release) + "dep\texample.com/extra\tv1.0.0\th1:x=\n", "links example.com/extra"},
		{"a replaced dependency", release, strings.Replace(init(release), "dep\tgolang.org/x/sys\tv0.30.0\th1:sys=\n", "dep\tgolang.org/x/sys\tv0.30.0\th1:sys=\n=>\t../sys\t(devel)\t\n", 1), "replaced in one build only"},
		{"another commit", checkout, strings.ReplaceAll(init(checkout), "0123456789ab", "ba9876543210"), "module"},
		{"a dirty tree", strings.Replace(checkout, "modified=false", "modified=true", 1), strings.Replace(init(checkout), "modified=false", "modified=true", 1), "uncommitted changes"},
		{"a dirty init", checkout, strings.Replace(init(checkout), "modified=false", "modified=true", 1), "uncommitted changes"},
		{"go run, both", "go\tgo1.26.8\npath\tcommand-line-arguments\nmod\tgithub.com/baton-agent/baton\t(devel)\t\n", "go\tgo1.26.8\npath\tcommand-line-arguments\nmod\tgithub.com/baton-agent/baton\t(devel)\t\n", "neither a module version"},
		{"no main module", "go\tgo1.26.8\npath\tx\n", "go\tgo1.26.8\npath\tx\n", "no main module"},
	} {
		err := Same(parse(c.self), parse(c.other))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Same = %v, want the same build", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Same = %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if err := Same(nil, parse(release)); err == nil {
		t.Error("Same(nil, a build) = nil, want an error")
	}
}
