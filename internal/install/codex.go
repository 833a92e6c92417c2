package install

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Codex CLI: hooks in .codex/hooks.json (project; loaded only in trusted
// projects) or ~/.codex/hooks.json (user); custom prompts only exist in
// ~/.codex/prompts/, invoked as /prompts:<name>. Codex runs a new or
// changed hook only after the user trusts it in /hooks, so install never
// rewrites a hooks file whose baton hooks are already right.
var codexSpec = harnessSpec{
	hooksFile: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.codexHome(), "hooks.json")
		}
		return filepath.Join(t.Root, ".codex", "hooks.json")
	},
	hookEvents: []hookEvent{
		{Event: "SessionStart", Matcher: "startup|resume|clear|compact", Baton: "session-start"},
		{Event: "PostToolUse", Matcher: strings.Join(baton.WriteTools[baton.HarnessCodex], "|"), Baton: "post-tool-use"},
		{Event: "PreCompact", Baton: "pre-compact"},
		{Event: "Stop", Baton: "stop"},
	},
	commandsDir: func(t Target) string { return filepath.Join(t.codexHome(), "prompts") },
	// Current Codex has no /prompts: any more; it lists skills to the
	// model and injects one with $<name>.
	skillsDir: func(t Target) string {
		if t.Scope == ScopeUser {
			return filepath.Join(t.codexHome(), "skills")
		}
		return filepath.Join(t.Root, ".agents", "skills")
	},
	dialect: dialect{ArgumentHint: true, Args: "$ARGUMENTS"},
	notes: func(t Target, changed bool) []string {
		var n []string
		if changed {
			n = append(n, "Codex runs new or changed hooks only after you trust them: open /hooks in Codex and trust baton's four hooks.")
		}
		if t.Scope == ScopeProject {
			n = append(n, "Project hooks load only in a trusted project ([projects.\""+t.Root+"\"] trust_level = \"trusted\" in "+filepath.Join(t.codexHome(), "config.toml")+", or `codex exec --trust` once).")
		}
		n = append(n, "Skills: $handoff, $pickup, $baton-loop, ... (current Codex); the same as prompts in "+filepath.Join(t.codexHome(), "prompts")+" for Codex versions that still read /prompts:<name>.")
		return n
	},
}

// CodexTrust is what Codex's config.toml says about a codex installation:
// whether the project is trusted (Codex runs no project hook otherwise)
// and which of baton's hook events have been trusted in the "Hooks need
// review" dialog (codex exec silently skips the others).
type CodexTrust struct {
	Config         string   `json:"config"`
	ProjectTrusted bool     `json:"project_trusted"`
	TrustedEvents  []string `json:"trusted_events"`
}

// InspectCodexTrust reads $CODEX_HOME/config.toml for t. A missing file
// trusts nothing.
func InspectCodexTrust(t Target) (CodexTrust, error) {
	ct := CodexTrust{Config: filepath.Join(t.codexHome(), "config.toml"), TrustedEvents: []string{}}
	b, err := safefile.ReadFile(ct.Config, maxSettingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return ct, nil
	} else if err != nil {
		return ct, err
	}
	var cfg struct {
		Projects map[string]struct {
			TrustLevel string `toml:"trust_level"`
		} `toml:"projects"`
		Hooks struct {
			State map[string]struct {
				TrustedHash string `toml:"trusted_hash"`
			} `toml:"state"`
		} `toml:"hooks"`
	}
	if _, err := toml.Decode(string(b), &cfg); err != nil {
		return ct, fmt.Errorf("%s: %w", ct.Config, err)
	}
	ct.ProjectTrusted = t.Scope == ScopeUser || cfg.Projects[t.Root].TrustLevel == "trusted"
	prefix := codexSpec.hooksFile(t) + ":"
	for key, st := range cfg.Hooks.State {
		if rest, ok := strings.CutPrefix(key, prefix); ok && st.TrustedHash != "" {
			ev, _, _ := strings.Cut(rest, ":")
			ct.TrustedEvents = append(ct.TrustedEvents, ev)
		}
	}
	sort.Strings(ct.TrustedEvents)
	return ct, nil
}

// CodexHooksOff says why Codex started in dir would not run the hooks of
// dir's .codex/hooks.json ("" when it would, or when there are none):
// Codex runs no project hook in an untrusted project, and codex exec skips
// hooks not yet trusted in its review dialog. home and codexHome are the
// environment's HOME and CODEX_HOME.
func CodexHooksOff(dir, home, codexHome string) string {
	t := Target{Harness: baton.HarnessCodex, Scope: ScopeProject, Root: dir, Home: home, CodexHome: codexHome}
	hooks, err := FindBatonHooks(codexSpec.hooksFile(t), false)
	if err != nil || len(hooks) == 0 {
		return ""
	}
	ct, err := InspectCodexTrust(t)
	if err != nil {
		return err.Error()
	}
	if !ct.ProjectTrusted {
		return fmt.Sprintf("%s is not a trusted project in %s", dir, ct.Config)
	}
	var untrusted []string
	for _, h := range hooks {
		if !slices.Contains(ct.TrustedEvents, h.Event) {
			untrusted = append(untrusted, h.Event)
		}
	}
	if len(untrusted) > 0 {
		return fmt.Sprintf("its %s hook(s) are not trusted in Codex's /hooks review, and codex exec skips them", strings.Join(untrusted, ", "))
	}
	return ""
}
