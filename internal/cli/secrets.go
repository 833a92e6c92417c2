package cli

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// A secret baton holds: the variable it is read from, and the ways to
// keep it out of every process's environment instead: a file named by
// NAME_FILE (or a --*-file flag), or a credential systemd's
// LoadCredential= put in $CREDENTIALS_DIRECTORY (a Kubernetes secret
// volume is a file too).
type secretSource struct {
	Var, FileVar, Credential string
}

var secretSources = []secretSource{
	{"GH_TOKEN", "BATON_GITHUB_TOKEN_FILE", "github-token"},
	{"BATON_API_TOKEN", "BATON_API_TOKEN_FILE", "api-token"},
	{"BATON_WEBHOOK_SECRET", "BATON_WEBHOOK_SECRET_FILE", "webhook-secret"},
	{"BATON_DATABASE_URL", "BATON_DATABASE_URL_FILE", "database-url"},
	// A GitHub App's private key (PEM), when baton acts as the App.
	{"BATON_GITHUB_APP_KEY", "BATON_GITHUB_APP_KEY_FILE", "github-app-key"},
	// Notification targets: the URL of a Slack incoming webhook is its
	// credential; an outbound webhook's secret signs its bodies.
	{"BATON_NOTIFY_SLACK_URL", "BATON_NOTIFY_SLACK_URL_FILE", "notify-slack-url"},
	{"BATON_NOTIFY_WEBHOOK_SECRET", "BATON_NOTIFY_WEBHOOK_SECRET_FILE", "notify-webhook-secret"},
}

// maxSecretFile bounds what is read of a secret's file.
const maxSecretFile = 64 << 10

// Secrets is the environment as baton reads its own secrets from it:
// Getenv answers GH_TOKEN, BATON_API_TOKEN, BATON_WEBHOOK_SECRET,
// BATON_DATABASE_URL, BATON_GITHUB_APP_KEY and the notification secrets
// from their files when they have one (a file wins over the variable: it
// is the more deliberate setting), and everything else from the process
// environment, unless a flag set it (SetValue). Paths lists the files,
// which no agent may read.
type Secrets struct {
	getenv func(string) string

	mu     sync.Mutex
	values map[string]string
	paths  []string
	// errs holds, by variable, why its file could not be read; order
	// lists the variables in the order they failed.
	errs  map[string]error
	order []string
}

// NewSecrets reads the secrets getenv's environment names files for. A
// file that cannot be read is an error that Err reports; Getenv then
// answers "" for its secret, never the variable behind it.
func NewSecrets(getenv func(string) string) *Secrets {
	s := &Secrets{getenv: getenv, values: map[string]string{}, errs: map[string]error{}}
	creds := getenv("CREDENTIALS_DIRECTORY")
	if filepath.IsAbs(creds) {
		s.paths = append(s.paths, creds)
	}
	for _, src := range secretSources {
		if file := getenv(src.FileVar); file != "" {
			s.record(src.Var, src.FileVar, file)
			continue
		}
		if creds == "" || !filepath.IsAbs(creds) || getenv(src.Var) != "" {
			continue
		}
		if p := filepath.Join(creds, src.Credential); exists(p) {
			s.record(src.Var, "$CREDENTIALS_DIRECTORY", p)
		}
	}
	return s
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// SetValue makes Getenv answer value for variable name, as a flag that
// stands for a variable asks (--github-app-id for BATON_GITHUB_APP_ID).
func (s *Secrets) SetValue(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[name] = value
}

// Set reads the secret of variable name from file, as a --*-file flag
// asks.
func (s *Secrets) Set(name, file string) error {
	return s.record(name, "--"+flagName(name), file)
}

// flagName is the flag that names a secret's file.
func flagName(name string) string {
	for _, src := range secretSources {
		if src.Var == name {
			return strings.TrimPrefix(strings.ToLower(strings.ReplaceAll(src.FileVar, "_", "-")), "baton-")
		}
	}
	return strings.ToLower(name) + "-file"
}

func (s *Secrets) record(name, from, file string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	s.paths = append(s.paths, file)
	s.values[name] = ""
	data, err := readSecret(file)
	if err == nil {
		s.values[name] = strings.TrimSpace(string(data))
		if s.values[name] == "" {
			err = errors.New("it is empty")
		}
	}
	if err != nil {
		e := baton.WrapError(baton.Invalid, err, "%s names %s for %s, which cannot be read: %s", from, file, name, why(err))
		if _, ok := s.errs[name]; !ok {
			s.order = append(s.order, name)
		}
		s.errs[name] = e
		return e
	}
	if _, ok := s.errs[name]; ok {
		delete(s.errs, name) // a flag's good file replaces the environment's bad one
		s.order = slices.DeleteFunc(s.order, func(n string) bool { return n == name })
	}
	return nil
}

// readSecret reads a secret's file, following links (a Kubernetes secret
// volume is made of them) to a regular file, without blocking on a FIFO.
func readSecret(file string) ([]byte, error) {
	f, err := safefile.OpenRegularFollow(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err == nil && len(b) > maxSecretFile {
		err = safefile.ErrTooLarge
	}
	return b, err
}

func why(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, safefile.ErrNotRegular):
		return "not a regular file"
	case errors.Is(err, safefile.ErrTooLarge):
		return "larger than a secret can be"
	}
	return err.Error()
}

// Getenv returns the named variable: a secret from its file when it has
// one, else the environment's value.
func (s *Secrets) Getenv(name string) string {
	s.mu.Lock()
	v, ok := s.values[name]
	s.mu.Unlock()
	if ok {
		return v
	}
	return s.getenv(name)
}

// Err reports every secret file that could not be read.
func (s *Secrets) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errOf(s.order)
}

// ErrOf reports the secrets among names whose file could not be read. A
// command about to use one calls it: told where its secret is, it must
// not go on as if none were set.
func (s *Secrets) ErrOf(names ...string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errOf(names)
}

func (s *Secrets) errOf(names []string) error {
	var errs []error
	for _, n := range names {
		if e, ok := s.errs[n]; ok {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// Paths are the files secrets were read from, and the credentials
// directory: what an agent's sandbox denies.
func (s *Secrets) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// secrets reads the secrets of files flags named (variable → file; ""
// for a flag not given) and reports any secret file that could not be
// read, by flag or by environment: a command that holds secrets must not
// start without the one it was told to use.
func (f *Factory) secrets(files map[string]string) error {
	if f.Secrets == nil {
		return nil
	}
	for name, file := range files {
		if file != "" {
			if err := f.Secrets.Set(name, f.abs(file)); err != nil {
				return err
			}
		}
	}
	return f.Secrets.Err()
}
