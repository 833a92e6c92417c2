// Package codexconf reads what Codex CLI's own configuration says about
// baton's hooks: where Codex keeps its files, whether a project is trusted
// (Codex runs no project hook otherwise) and which hooks were trusted in
// its "Hooks need review" dialog (codex exec silently skips the others).
// It only reads; internal/install writes Codex's files.
package codexconf

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
	"github.com/baton-agent/baton/internal/safefile"
)

// maxFileBytes bounds a Codex file baton reads.
const maxFileBytes = 16 << 20

// HooksFile is the hooks file Codex reads for the project at root, or,
// with root "", the user's in dir.
func HooksFile(dir, root string) string {
	if root == "" {
		return filepath.Join(dir, "hooks.json")
	}
	return filepath.Join(root, ".codex", "hooks.json")
}

// Trust is what Codex's config.toml says about one hooks file.
type Trust struct {
	Config         string   `json:"config"`
	ProjectTrusted bool     `json:"project_trusted"`
	TrustedEvents  []string `json:"trusted_events"`
}

// ReadTrust reads dir/config.toml for the hooks of the project at root,
// or, with root "", the user's hooks (which need no project trust). A
// missing file trusts nothing.
func ReadTrust(dir, root string) (Trust, error) {
	tr := Trust{Config: filepath.Join(dir, "config.toml"), TrustedEvents: []string{}}
	b, err := safefile.ReadFileFollow(tr.Config, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return tr, nil
	} else if err != nil {
		return tr, err
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
		return tr, fmt.Errorf("%s: %w", tr.Config, err)
	}
	tr.ProjectTrusted = root == "" || cfg.Projects[root].TrustLevel == "trusted"
	// A reviewed hook is keyed "<hooks file>:<event>:<group>:<handler>".
	prefix := HooksFile(dir, root) + ":"
	for key, st := range cfg.Hooks.State {
		if rest, ok := strings.CutPrefix(key, prefix); ok && st.TrustedHash != "" {
			ev, _, _ := strings.Cut(rest, ":")
			tr.TrustedEvents = append(tr.TrustedEvents, ev)
		}
	}
	sort.Strings(tr.TrustedEvents)
	return tr, nil
}

// HooksOff says why Codex started in dir would not run the baton hooks of
// dir's .codex/hooks.json ("" when it would, or when there are none):
// Codex runs no project hook in an untrusted project, and codex exec skips
// hooks not yet trusted in its review dialog. home is the environment's
// HOME, and getenv reads the rest of it (CODEX_HOME).
func HooksOff(dir, home string, getenv func(string) string) string {
	events := batonEvents(HooksFile("", dir))
	if len(events) == 0 {
		return ""
	}
	tr, err := ReadTrust(harness.Codex.UserPath(home, getenv), dir)
	if err != nil {
		return err.Error()
	}
	if !tr.ProjectTrusted {
		return fmt.Sprintf("%s is not a trusted project in %s", dir, tr.Config)
	}
	var untrusted []string
	for _, ev := range events {
		if !slices.Contains(tr.TrustedEvents, ev) {
			untrusted = append(untrusted, ev)
		}
	}
	if len(untrusted) > 0 {
		return fmt.Sprintf("its %s hook(s) are not trusted in Codex's /hooks review, and codex exec skips them", strings.Join(untrusted, ", "))
	}
	return ""
}

// batonEvents lists, sorted, the Codex events under which a hooks
// file ({"hooks": {"Stop": [{"hooks": [{"command": ...}]}]}}) holds one of
// baton's hooks. A file that is missing or not JSON holds none; a group
// or handler of the wrong shape is skipped, as Codex does not run it.
func batonEvents(file string) []string {
	b, err := safefile.ReadFileFollow(file, maxFileBytes)
	if err != nil {
		return nil
	}
	var f struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	var out []string
	for ev, raw := range f.Hooks {
		if hasBatonHook(raw) {
			out = append(out, ev)
		}
	}
	sort.Strings(out)
	return out
}

// hasBatonHook reports whether an event's matcher groups hold baton's hook.
func hasBatonHook(groups json.RawMessage) bool {
	var gs []json.RawMessage
	if json.Unmarshal(groups, &gs) != nil {
		return false
	}
	for _, g := range gs {
		var group struct {
			Hooks []json.RawMessage `json:"hooks"`
		}
		if json.Unmarshal(g, &group) != nil {
			continue
		}
		for _, h := range group.Hooks {
			var handler struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			}
			if json.Unmarshal(h, &handler) != nil {
				continue
			}
			if _, ok := harness.ParseCommand(handler.Command, handler.Args); ok {
				return true
			}
		}
	}
	return false
}
