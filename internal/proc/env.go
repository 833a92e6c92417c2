package proc

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// githubTokenVars are the variables gh, GitHub Actions and baton read a
// GitHub token from.
var githubTokenVars = []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"}

// batonSecretWords mark a BATON_ variable as a credential or the way to
// one: a token, a password, a key, a URL or DSN that may carry one
// (BATON_DATABASE_URL), a file holding one (BATON_API_TOKEN_FILE), or the
// directory baton keeps them in (BATON_DATA_DIR).
var batonSecretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "URL", "DSN", "FILE", "DATA"}

// serviceVars are what a service manager hands baton alone: where its
// credentials are (systemd's LoadCredential) and its notification socket.
var serviceVars = []string{"CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET"}

// Secret reports whether the environment variable name holds a credential
// that a child baton starts (an agent, a check command) does not inherit
// unless asked: a GitHub token, or one of baton's own secrets. Agents
// follow text anyone can write into an issue, and checks run code an
// agent wrote; neither needs to act on GitHub as the user. The agent's
// own API key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) is not one: the
// agent cannot run without it.
func Secret(name string) bool {
	n := strings.ToUpper(name)
	if slices.Contains(githubTokenVars, n) || slices.Contains(serviceVars, n) {
		return true
	}
	rest, ok := strings.CutPrefix(n, "BATON_")
	if !ok {
		return false
	}
	for _, w := range batonSecretWords {
		if strings.Contains(rest, w) {
			return true
		}
	}
	return false
}

// Environ is the environment a child starts with: baton's own, without
// its secrets (see Secret), except those named in pass, which the user
// asked to hand on.
func Environ(pass []string) []string {
	return FilterEnv(os.Environ(), pass)
}

// FilterEnv returns env without the secrets it holds, except those named
// in pass.
func FilterEnv(env, pass []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if Secret(name) && !slices.Contains(pass, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// CheckPassEnv reports an error for a name in pass that is not a
// variable name, so a typo cannot silently pass nothing.
func CheckPassEnv(pass []string) error {
	for _, name := range pass {
		if !validName(name) {
			return fmt.Errorf("%q is not an environment variable name", name)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
