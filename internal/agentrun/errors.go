package agentrun

import (
	"errors"
	"fmt"

	"github.com/baton-agent/baton"
)

// Sentinels for errors.Is. Every error Run returns wraps at most one of
// them (or context.Canceled) inside a *baton.Error; the package doc lists
// the baton code and the order in which they are chosen.
var (
	// ErrInvalidSpec: the Spec cannot be run (unknown agent, bad
	// command:<argv> quoting, schema that is not JSON). Code Invalid.
	ErrInvalidSpec = errors.New("invalid agent spec")
	// ErrNotInstalled: the agent's executable is not on PATH (or the
	// command path does not exist). Nothing was started. Code NotFound.
	ErrNotInstalled = errors.New("agent not installed")
	// ErrTimeout: Spec.Timeout or the context's deadline passed and the
	// agent was stopped. Result holds what came before. Code Unavailable.
	// For a context deadline the error also matches
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("agent timed out")
	// ErrAgentFailed: the agent exited non-zero or reported an error
	// (Result.IsError). Code Unavailable.
	ErrAgentFailed = errors.New("agent failed")
	// ErrNoResult: the agent exited 0 but its output ended without a result
	// line or final message. Result.FinalText holds the last assistant text
	// seen, if any. Code Unavailable.
	ErrNoResult = errors.New("agent output ended without a result")
	// ErrBadOutput: a schema was given and the final message is not JSON or
	// does not validate. Result.FinalText (and Structured, when it parsed)
	// hold what the agent said. Code Unavailable.
	ErrBadOutput = errors.New("agent output does not match the schema")
)

// newError builds the *baton.Error Run returns: msg is user-facing, and the
// cause chain holds sentinel and, when set, the underlying error.
// unstated is a sentinel that the message already states: errors.Is
// finds it, and it adds no text.
type unstated struct{ err error }

func (u unstated) Error() string { return "" }
func (u unstated) Unwrap() error { return u.err }

func newError(code baton.Code, sentinel, cause error, format string, args ...any) error {
	var err error
	switch {
	case sentinel != nil && cause != nil && sentinel.Error() == "":
		err = fmt.Errorf("%w%w", sentinel, cause)
	case sentinel != nil && cause != nil:
		err = fmt.Errorf("%w: %w", sentinel, cause)
	case sentinel != nil:
		err = sentinel
	default:
		err = cause
	}
	return &baton.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

func invalidSpec(format string, args ...any) error {
	return newError(baton.Invalid, ErrInvalidSpec, nil, format, args...)
}
