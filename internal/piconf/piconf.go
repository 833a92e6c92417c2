// Package piconf reads what pi's own configuration says about baton: where
// pi keeps its files, whether a project is trusted (since pi 0.79 a
// project's .pi/ extensions, skills, prompts and mcp.json load only in a
// trusted project, and print, JSON and RPC modes skip them unless run
// with -a) and which pi packages are installed. It only reads;
// internal/install writes pi's files.
package piconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/safefile"
)

// maxFileBytes bounds a pi file baton reads.
const maxFileBytes = 16 << 20

// Decision is pi's answer to "may this project's .pi/ resources load?".
type Decision string

const (
	Trusted   Decision = "trusted"   // a saved decision (or defaultProjectTrust "always") allows it
	Declined  Decision = "declined"  // a saved decision (or defaultProjectTrust "never") refuses it
	Undecided Decision = "undecided" // pi asks at the next interactive start; other modes skip them
)

// Trust is what pi's agent directory says about one project.
type Trust struct {
	File     string   `json:"file"` // trust.json
	Decision Decision `json:"decision"`
	// Saved is the directory whose saved decision applies ("" when the
	// decision comes from defaultProjectTrust).
	Saved string `json:"saved,omitempty"`
}

// ReadTrust says whether pi, started in project, loads its .pi/
// resources: the saved decision of the nearest directory at or above it
// in dir/trust.json (as pi's /trust writes it), else dir/settings.json's
// defaultProjectTrust ("ask" by default). A missing file decides nothing.
func ReadTrust(dir, project string) (Trust, error) {
	tr := Trust{File: filepath.Join(dir, "trust.json"), Decision: Undecided}
	b, err := safefile.ReadFileFollow(tr.File, maxFileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tr, err
	}
	if err == nil {
		saved, ok, err := savedDecision(b, canonical(project))
		if err != nil {
			return tr, fmt.Errorf("%s: %w", tr.File, err)
		}
		if saved != "" {
			tr.Saved = saved
			tr.Decision = Declined
			if ok {
				tr.Decision = Trusted
			}
			return tr, nil
		}
	}
	var settings struct {
		DefaultProjectTrust string `json:"defaultProjectTrust"`
	}
	sb, err := safefile.ReadFileFollow(filepath.Join(dir, "settings.json"), maxFileBytes)
	if err == nil && json.Unmarshal(sb, &settings) == nil {
		switch settings.DefaultProjectTrust {
		case "always":
			tr.Decision = Trusted
		case "never":
			tr.Decision = Declined
		}
	}
	return tr, nil
}

// savedDecision finds the saved decision nearest to dir (an absolute,
// clean path) in trust.json's bytes: a JSON object of absolute directory
// paths to true (trusted), false (declined) or null (no decision). It
// returns the directory and the decision, or "" when none applies.
func savedDecision(data []byte, dir string) (string, bool, error) {
	var entries map[string]*bool
	if err := json.Unmarshal(data, &entries); err != nil {
		return "", false, fmt.Errorf("not a JSON object of paths: %w", err)
	}
	byDir := map[string]bool{}
	for k, v := range entries {
		if v != nil && filepath.IsAbs(k) {
			byDir[filepath.Clean(k)] = *v
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		if v, ok := byDir[d]; ok {
			return d, v, nil
		}
		if filepath.Dir(d) == d {
			return "", false, nil
		}
	}
}

// canonical is path as pi keys it: absolute, clean, links resolved when
// it exists.
func canonical(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

// Packages lists the sources of the pi packages a settings.json declares
// ("packages": ["npm:…", "./dir", {"source": "git:…"}]), with local paths
// made absolute against the file's directory. A missing file declares
// none.
func Packages(settingsFile string) ([]string, error) {
	b, err := safefile.ReadFileFollow(settingsFile, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var s struct {
		Packages []json.RawMessage `json:"packages"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", settingsFile, err)
	}
	var out []string
	for _, raw := range s.Packages {
		var src string
		if json.Unmarshal(raw, &src) != nil {
			var obj struct {
				Source string `json:"source"`
			}
			if json.Unmarshal(raw, &obj) != nil {
				continue
			}
			src = obj.Source
		}
		if src == "" {
			continue
		}
		if isLocal(src) {
			if strings.HasPrefix(src, "~/") {
				if home, err := os.UserHomeDir(); err == nil {
					src = filepath.Join(home, src[2:])
				}
			} else if !filepath.IsAbs(src) {
				src = filepath.Join(filepath.Dir(settingsFile), src)
			}
			src = filepath.Clean(src)
		}
		out = append(out, src)
	}
	return out, nil
}

// isLocal reports whether a package source is a path rather than an
// npm:, git: or URL source.
func isLocal(src string) bool {
	for _, p := range []string{"npm:", "git:", "http://", "https://", "ssh://", "git@"} {
		if strings.HasPrefix(src, p) {
			return false
		}
	}
	return true
}
