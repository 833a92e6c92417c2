package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/piconf"
	"github.com/baton-agent/baton/internal/safefile"
)

// PluginEnabled says where baton's plugin (or, for pi, its package) is
// enabled for t's harness in this project: any of the harness's user or
// project settings, whatever t's scope, since the plugin's hooks run
// beside installed ones either way. It returns the files that enable it
// (none when it is not).
func PluginEnabled(t Target) ([]string, error) {
	var files []string
	var errs []error
	check := func(file string, enabled func([]byte) (bool, error)) {
		b, err := readSettings(file)
		if errors.Is(err, fs.ErrNotExist) {
			return
		} else if err != nil {
			errs = append(errs, err)
			return
		}
		ok, err := enabled(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
		} else if ok {
			files = append(files, file)
		}
	}
	project := func(p ...string) (string, bool) {
		if t.Root == "" {
			return "", false
		}
		return filepath.Join(append([]string{t.Root}, p...)...), true
	}
	switch t.Harness {
	case baton.HarnessClaude:
		// enabledPlugins: {"baton@<marketplace>": true} in any settings file.
		check(filepath.Join(t.Home, ".claude", "settings.json"), enabledPluginsJSON)
		for _, name := range []string{"settings.json", "settings.local.json"} {
			if f, ok := project(".claude", name); ok {
				check(f, enabledPluginsJSON)
			}
		}
	case baton.HarnessDroid:
		check(filepath.Join(t.Home, ".factory", "settings.json"), enabledPluginsJSON)
		for _, name := range []string{"settings.json", "settings.local.json"} {
			if f, ok := project(".factory", name); ok {
				check(f, enabledPluginsJSON)
			}
		}
	case baton.HarnessCodex:
		// [plugins."baton@<marketplace>"] enabled = true in config.toml.
		check(filepath.Join(t.codexHome(), "config.toml"), enabledPluginsTOML)
		if f, ok := project(".codex", "config.toml"); ok {
			check(f, enabledPluginsTOML)
		}
	case baton.HarnessPi:
		settings := []string{filepath.Join(t.piAgentDir(), "settings.json")}
		if f, ok := project(".pi", "settings.json"); ok {
			settings = append(settings, f)
		}
		for _, f := range settings {
			srcs, err := piconf.Packages(f)
			if err != nil {
				errs = append(errs, err)
			}
			for _, src := range srcs {
				if isBatonPiPackage(src) {
					files = append(files, f)
					break
				}
			}
		}
	}
	sort.Strings(files)
	return files, errors.Join(errs...)
}

// readSettings reads a settings file, following a link (a dotfiles
// repository), up to maxSettingsBytes.
func readSettings(file string) ([]byte, error) {
	return safefile.ReadFileFollow(file, maxSettingsBytes)
}

// isBatonPlugin reports whether a plugin id (plugin@marketplace) is
// baton's.
func isBatonPlugin(id string) bool {
	name, _, _ := strings.Cut(id, "@")
	return name == PluginName
}

// enabledPluginsJSON reads Claude Code's and Droid's settings:
// {"enabledPlugins": {"baton@baton": true}}.
func enabledPluginsJSON(b []byte) (bool, error) {
	var s struct {
		EnabledPlugins map[string]json.RawMessage `json:"enabledPlugins"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return false, err
	}
	for id, v := range s.EnabledPlugins {
		if isBatonPlugin(id) && string(v) == "true" {
			return true, nil
		}
	}
	return false, nil
}

// enabledPluginsTOML reads Codex's config.toml: [plugins."baton@baton"]
// enabled = true.
func enabledPluginsTOML(b []byte) (bool, error) {
	var c struct {
		Plugins map[string]struct {
			Enabled *bool `toml:"enabled"`
		} `toml:"plugins"`
	}
	if _, err := toml.Decode(string(b), &c); err != nil {
		return false, err
	}
	for id, p := range c.Plugins {
		if isBatonPlugin(id) && (p.Enabled == nil || *p.Enabled) {
			return true, nil
		}
	}
	return false, nil
}

// isBatonPiPackage reports whether a pi package source is baton's: the
// git repository, or a directory whose package.json names baton's pi
// package (a checkout, or its plugin directory).
func isBatonPiPackage(src string) bool {
	s := strings.TrimSuffix(strings.ToLower(src), ".git")
	if strings.Contains(s, "github.com/baton-agent/baton") && !strings.Contains(s, "github.com/baton-agent/baton-") {
		return true
	}
	if strings.HasPrefix(s, "npm:") {
		name := strings.TrimPrefix(src, "npm:")
		if i := strings.LastIndex(name, "@"); i > 0 {
			name = name[:i]
		}
		return name == PiPackageName
	}
	if !filepath.IsAbs(src) {
		return false
	}
	b, err := safefile.ReadFileFollow(filepath.Join(src, "package.json"), maxSettingsBytes)
	if err != nil {
		return false
	}
	var pkg struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(b, &pkg) == nil && pkg.Name == PiPackageName
}
