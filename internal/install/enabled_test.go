package install

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzEnabledPlugins: the settings readers say baton's plugin is enabled
// only when the file holds an entry for a plugin named baton (any
// marketplace) that is on, and never fail on the settings' other keys.
func FuzzEnabledPlugins(f *testing.F) {
	f.Add([]byte(`{"enabledPlugins":{"baton@baton":true}}`))
	f.Add([]byte(`{"enabledPlugins":{"baton-extras@x":true,"baton@x":false}}`))
	f.Add([]byte("[plugins.\"baton@baton\"]\nenabled = true\n"))
	f.Add([]byte("[plugins.\"batonx@baton\"]\nenabled = true\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if ok, err := enabledPluginsJSON(data); err == nil && ok {
			var s struct {
				EnabledPlugins map[string]any `json:"enabledPlugins"`
			}
			if json.Unmarshal(data, &s) != nil || !anyBatonOn(s.EnabledPlugins, func(v any) bool { return v == true }) {
				t.Fatalf("enabledPluginsJSON(%q) = true", data)
			}
		}
		if ok, err := enabledPluginsTOML(data); err == nil && ok {
			var c struct {
				Plugins map[string]map[string]any `toml:"plugins"`
			}
			if _, err := toml.Decode(string(data), &c); err != nil {
				t.Fatalf("enabledPluginsTOML(%q) = true from a file that does not parse", data)
			}
			on := false
			for id, p := range c.Plugins {
				if e, set := p["enabled"]; strings.SplitN(id, "@", 2)[0] == PluginName && (!set || e == true) {
					on = true
				}
			}
			if !on {
				t.Fatalf("enabledPluginsTOML(%q) = true", data)
			}
		}
	})
}

func anyBatonOn(m map[string]any, on func(any) bool) bool {
	for id, v := range m {
		if strings.SplitN(id, "@", 2)[0] == PluginName && on(v) {
			return true
		}
	}
	return false
}
