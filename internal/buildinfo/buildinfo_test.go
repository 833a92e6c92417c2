package buildinfo

import (
	"runtime/debug"
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
