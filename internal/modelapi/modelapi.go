// Package modelapi says where an agent CLI's model API lives, read from
// the agent's own configuration, the place the user already set it:
// Claude Code's ANTHROPIC_BASE_URL (its environment, or the env block of
// its settings.json), Codex's model providers in config.toml and
// OPENAI_BASE_URL, Droid's custom models in ~/.factory/settings.json,
// pi's providers in models.json; without one, the vendor's public API.
// The box's network allowlist (internal/egress) takes them, so a model
// server is never typed twice.
package modelapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/safefile"
)

// maxConfigFile bounds an agent's configuration file baton reads.
const maxConfigFile = 1 << 20

// Public APIs of the agent CLIs' vendors: the model API and the hosts a
// sign-in refreshes its token at.
var vendorAPIs = map[baton.Harness][]string{
	baton.HarnessClaude: {"api.anthropic.com", "console.anthropic.com", "platform.claude.com", "claude.ai"},
	baton.HarnessCodex:  {"api.openai.com", "chatgpt.com", "auth.openai.com"},
	baton.HarnessDroid:  {"api.factory.ai", "app.factory.ai"},
}

// piProviders are the public APIs of pi's built-in providers.
var piProviders = map[string]string{
	"anthropic": "api.anthropic.com", "openai": "api.openai.com", "google": "generativelanguage.googleapis.com",
	"openrouter": "openrouter.ai", "groq": "api.groq.com", "xai": "api.x.ai", "mistral": "api.mistral.ai",
	"cerebras": "api.cerebras.ai", "deepseek": "api.deepseek.com", "github-copilot": "api.githubcopilot.com",
}

// Hosts is where agent h's model API lives, as allowlist entries (URLs
// and host names) read from its configuration under env (the agent's environment: HOME and
// the agent's own variables). A configuration file that cannot be read
// or parsed is an Invalid error naming it: an agent that cannot reach
// its model is worth a clear word before it starts.
func Hosts(h baton.Harness, env []string) ([]string, error) {
	get := func(name string) string { return lastValue(env, name) }
	home := get("HOME")
	var out []string
	switch h {
	case baton.HarnessClaude:
		settings := ""
		if dir := get("CLAUDE_CONFIG_DIR"); filepath.IsAbs(dir) {
			settings = filepath.Join(dir, "settings.json")
		} else if filepath.IsAbs(home) {
			settings = filepath.Join(home, ".claude", "settings.json")
		}
		b, err := readConfig(settings)
		if err != nil {
			return nil, err
		}
		fromFile, err := ClaudeSettingsEnv(b)
		if err != nil {
			return nil, baton.WrapError(baton.Invalid, err, "read %s", settings)
		}
		out = claudeAPI(func(name string) string {
			if v := get(name); v != "" {
				return v
			}
			return fromFile[name]
		})
	case baton.HarnessCodex:
		dir := harness.Codex.UserPath(home, get)
		if !filepath.IsAbs(dir) {
			break
		}
		file := filepath.Join(dir, "config.toml")
		b, err := readConfig(file)
		if err != nil {
			return nil, err
		}
		urls, builtin, err := CodexProviders(b)
		if err != nil {
			return nil, baton.WrapError(baton.Invalid, err, "read %s", file)
		}
		out = append(out, urls...)
		if builtin {
			if u := get("OPENAI_BASE_URL"); u != "" {
				out = append(out, u)
			} else {
				out = append(out, vendorAPIs[h]...)
			}
		}
	case baton.HarnessDroid:
		if !filepath.IsAbs(home) {
			break
		}
		file := filepath.Join(harness.Droid.UserPath(home, get), "settings.json")
		b, err := readConfig(file)
		if err != nil {
			return nil, err
		}
		urls, err := DroidModels(b)
		if err != nil {
			return nil, baton.WrapError(baton.Invalid, err, "read %s", file)
		}
		// Droid talks to Factory's service as well as to a custom model.
		out = append(append(out, urls...), vendorAPIs[h]...)
	case baton.HarnessPi:
		dir := harness.Pi.UserPath(home, get)
		if !filepath.IsAbs(dir) {
			break
		}
		for _, name := range []string{"models.json", "settings.json"} {
			file := filepath.Join(dir, name)
			b, err := readConfig(file)
			if err != nil {
				return nil, err
			}
			urls, err := PiConfig(b)
			if err != nil {
				return nil, baton.WrapError(baton.Invalid, err, "read %s", file)
			}
			out = append(out, urls...)
		}
	}
	return dedupe(out), nil
}

// readConfig reads an agent's configuration file; a missing one (or no
// path) is empty.
func readConfig(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := safefile.ReadFileFollow(path, maxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "read %s", path)
	}
	return b, nil
}

// claudeAPI is Claude Code's model API from its variables: a base URL,
// Bedrock or Vertex, else Anthropic's.
func claudeAPI(get func(string) string) []string {
	if u := get("ANTHROPIC_BASE_URL"); u != "" {
		return []string{u}
	}
	switch {
	case truthy(get("CLAUDE_CODE_USE_BEDROCK")):
		if u := get("ANTHROPIC_BEDROCK_BASE_URL"); u != "" {
			return []string{u}
		}
		region := cmp.Or(get("AWS_REGION"), get("AWS_DEFAULT_REGION"), "us-east-1")
		return []string{"bedrock-runtime." + region + ".amazonaws.com", "sts." + region + ".amazonaws.com"}
	case truthy(get("CLAUDE_CODE_USE_VERTEX")):
		if u := get("ANTHROPIC_VERTEX_BASE_URL"); u != "" {
			return []string{u}
		}
		out := []string{"aiplatform.googleapis.com", "oauth2.googleapis.com"}
		if r := get("CLOUD_ML_REGION"); r != "" && r != "global" {
			out = append(out, r+"-aiplatform.googleapis.com")
		}
		return out
	}
	return vendorAPIs[baton.HarnessClaude]
}

// ClaudeSettingsEnv reads the env block of Claude Code's settings.json:
// the variables Claude Code sets for itself.
func ClaudeSettingsEnv(b []byte) (map[string]string, error) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var s struct {
		Env map[string]any `json:"env"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range s.Env {
		switch v := v.(type) {
		case string:
			out[k] = v
		case bool, float64:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

// CodexProviders reads Codex's config.toml: the base URL of every model
// provider it defines, and whether the provider in use is a built-in
// one (openai, unless model_provider names another; oss, ollama and
// lmstudio are local servers on their usual ports).
func CodexProviders(b []byte) (urls []string, builtin bool, err error) {
	var c struct {
		ModelProvider  string `toml:"model_provider"`
		ModelProviders map[string]struct {
			BaseURL string `toml:"base_url"`
		} `toml:"model_providers"`
		Profiles map[string]struct {
			ModelProvider string `toml:"model_provider"`
		} `toml:"profiles"`
	}
	if _, err := toml.Decode(string(b), &c); err != nil {
		return nil, false, err
	}
	names := make([]string, 0, len(c.ModelProviders))
	for name := range c.ModelProviders {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if u := c.ModelProviders[name].BaseURL; u != "" {
			urls = append(urls, u)
		}
	}
	used := []string{c.ModelProvider}
	profiles := make([]string, 0, len(c.Profiles))
	for name := range c.Profiles {
		profiles = append(profiles, name)
	}
	slices.Sort(profiles)
	for _, name := range profiles {
		used = append(used, c.Profiles[name].ModelProvider)
	}
	for _, p := range used {
		switch _, defined := c.ModelProviders[p]; {
		case defined:
		case p == "" || p == "openai":
			builtin = true
		case p == "oss" || p == "ollama":
			urls = append(urls, "localhost:11434")
		case p == "lmstudio":
			urls = append(urls, "localhost:1234")
		}
	}
	return urls, builtin, nil
}

// DroidModels reads the base URLs of the custom models in Droid's
// settings.json.
func DroidModels(b []byte) ([]string, error) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var s struct {
		CustomModels []struct {
			BaseURL string `json:"baseUrl"`
		} `json:"customModels"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range s.CustomModels {
		if m.BaseURL != "" {
			out = append(out, m.BaseURL)
		}
	}
	return out, nil
}

// PiConfig reads pi's models.json (each provider's baseUrl) or
// settings.json (the public API of its defaultProvider).
func PiConfig(b []byte) ([]string, error) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var s struct {
		Providers map[string]struct {
			BaseURL string `json:"baseUrl"`
		} `json:"providers"`
		DefaultProvider string `json:"defaultProvider"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	var out []string
	names := make([]string, 0, len(s.Providers))
	for name := range s.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if u := s.Providers[name].BaseURL; u != "" {
			out = append(out, u)
		} else if host, ok := piProviders[name]; ok {
			out = append(out, host)
		}
	}
	if host, ok := piProviders[s.DefaultProvider]; ok {
		out = append(out, host)
	}
	return out, nil
}

// lastValue is name's value in env (KEY=value entries; the last wins, as
// exec does).
func lastValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
