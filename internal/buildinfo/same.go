package buildinfo

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Same reports whether other is the same build as self: a program built
// from the same module at the same version or commit, from a clean tree,
// by the same Go toolchain with the same settings, and linking the same
// version of every module it shares with self. nil means it is; the
// error says why not. A build that cannot be told apart from another
// (a dirty tree, no version or commit recorded) is never the same as
// anything, itself included: two such builds may be of different code.
func Same(self, other *debug.BuildInfo) error {
	if self == nil || other == nil {
		return errors.New("no Go build information recorded")
	}
	if err := identified(self); err != nil {
		return fmt.Errorf("this build %w", err)
	}
	if err := identified(other); err != nil {
		return fmt.Errorf("it %w", err)
	}
	if self.GoVersion != other.GoVersion {
		return fmt.Errorf("built by %s, not %s", other.GoVersion, self.GoVersion)
	}
	if err := sameModule("module", &self.Main, &other.Main); err != nil {
		return err
	}
	if len(self.Settings) != len(other.Settings) {
		return fmt.Errorf("built with other settings (%d, not %d)", len(other.Settings), len(self.Settings))
	}
	settings := make(map[string]string, len(self.Settings))
	for _, s := range self.Settings {
		settings[s.Key] = s.Value
	}
	for _, s := range other.Settings {
		if v, ok := settings[s.Key]; !ok || v != s.Value {
			return fmt.Errorf("built with %s=%q, not %q", s.Key, s.Value, v)
		}
	}
	deps := make(map[string]*debug.Module, len(self.Deps))
	for _, d := range self.Deps {
		deps[d.Path] = d
	}
	for _, d := range other.Deps {
		mine, ok := deps[d.Path]
		if !ok {
			return fmt.Errorf("links %s, which this build does not", d.Path)
		}
		if err := sameModule("dependency", mine, d); err != nil {
			return err
		}
	}
	return nil
}

// identified says why bi does not name its code, nil when it does: a
// module version with its checksum (go install module@version), or a
// commit of a clean tree.
func identified(bi *debug.BuildInfo) error {
	if bi.Main.Path == "" {
		return errors.New("records no main module")
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case modified == "true":
		return errors.New("was built from a tree with uncommitted changes")
	case rev != "" && modified == "false":
		return nil
	case bi.Main.Version != "" && bi.Main.Version != "(devel)" && bi.Main.Sum != "":
		return nil
	}
	return errors.New("records neither a module version with its checksum nor a commit (go run, or -buildvcs=false)")
}

func sameModule(what string, a, b *debug.Module) error {
	if a.Path != b.Path || a.Version != b.Version || a.Sum != b.Sum {
		return fmt.Errorf("%s %s %s, not %s %s", what, b.Path, b.Version, a.Path, a.Version)
	}
	switch {
	case (a.Replace == nil) != (b.Replace == nil):
		return fmt.Errorf("%s %s replaced in one build only", what, a.Path)
	case a.Replace != nil:
		return sameModule(what+" replacement", a.Replace, b.Replace)
	}
	return nil
}
