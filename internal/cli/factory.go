// Package cli is baton's command tree. Commands are built by functions that
// take a *Factory; cli.Main runs them and maps errors to exit codes.
package cli

import (
	"io"
	"time"

	"github.com/baton-agent/baton/internal/fsstore"
)

// IO is where a command reads and writes. Tests hand in buffers.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// InTTY and OutTTY say whether stdin and stdout are terminals.
	InTTY  bool
	OutTTY bool
}

// Factory carries what commands need, built once in cmd/baton. Fields that
// are expensive (stores, databases, network clients) are lazy, so a hook
// pays only for what it uses.
type Factory struct {
	IO      IO
	Now     func() time.Time
	Getenv  func(string) string
	WorkDir string // the process working directory
	Version string
	// Executable is the absolute path of the running baton binary, for
	// installers that write it into harness configuration.
	Executable string
	// DynamicallyLinked says the binary was built with cgo: every process
	// start, so every hook, then pays for the dynamic loader.
	DynamicallyLinked bool

	// rootFlag is --root, set by the root command before any RunE.
	rootFlag string
	store    *fsstore.Store
}

// env returns the named variable, or "" when the factory has no Getenv.
func (f *Factory) env(key string) string {
	if f.Getenv == nil {
		return ""
	}
	return f.Getenv(key)
}

// now returns the current time from the injected clock.
func (f *Factory) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}
