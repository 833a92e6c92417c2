package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/piconf"
	"github.com/baton-agent/baton/internal/safefile"
)

// PluginEnabled says where baton's plugin (or, for pi, its package) is
// enabled for t's harness in this project: any of the harness's user or
// project settings, whatever t's scope, since the plugin's hooks run
// beside installed ones either way. It returns the files that enable it
// (none when it is not).
func PluginEnabled(t Target) ([]string, error) {
	h, err := harness.Lookup(string(t.Harness))
	if err != nil {
		return nil, err
	}
	var settings []string
	for _, name := range h.Plugin.UserFiles {
		settings = append(settings, filepath.Join(t.userDir(h), name))
	}
	if t.Root != "" {
		for _, name := range h.Plugin.ProjectFiles {
			settings = append(settings, filepath.Join(t.Root, h.ConfigDir, name))
		}
	}
	var files []string
	var errs []error
	for _, file := range settings {
		ok, err := enables(h.Plugin.Enabled, file)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			files = append(files, file)
		}
	}
	sort.Strings(files)
	return files, errors.Join(errs...)
}

// enables reports whether the settings file enables baton's plugin the
// way e says; a file that does not exist enables nothing.
func enables(e harness.Enablement, file string) (bool, error) {
	if e == harness.Packages {
		// pi's own reader: it knows the shapes a package entry takes.
		srcs, err := piconf.Packages(file)
		return slices.ContainsFunc(srcs, isBatonPiPackage), err
	}
	b, err := readSettings(file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	var ok bool
	switch e {
	case harness.EnabledPlugins:
		ok, err = enabledPluginsJSON(b)
	case harness.PluginTables:
		ok, err = enabledPluginsTOML(b)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", file, err)
	}
	return ok, nil
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
