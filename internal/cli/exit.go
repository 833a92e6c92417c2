package cli

import (
	"errors"
	"strconv"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// Exit codes. This table is the only place that decides them.
const (
	ExitOK    = 0
	ExitError = 1 // any failure, a runner's iteration limit, a refused confirmation
	ExitUsage = 2 // invalid input: bad flags, arguments or ids
	ExitStuck = 3 // the goal-tree runner has a leaf out of attempts
)

// ExitCodeError asks Main to exit with Code. Commands return it when the
// exit code itself carries meaning (a runner that is stuck). Err, when set,
// is printed like any other error; a nil Err prints nothing.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string {
	if e.Err == nil {
		return "exit status " + strconv.Itoa(e.Code)
	}
	return e.Err.Error()
}

func (e *ExitCodeError) Unwrap() error { return e.Err }

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	var ee *ExitCodeError
	if errors.As(err, &ee) {
		return ee.Code
	}
	// A store file that is corrupt or refused is not a mistake on the
	// command line: it fails, and no usage hint follows.
	var ce *fsstore.CorruptError
	var re *fsstore.RefusedError
	if errors.As(err, &ce) || errors.As(err, &re) {
		return ExitError
	}
	switch baton.ErrorCode(err) {
	case "":
		return ExitOK
	case baton.Invalid:
		return ExitUsage
	}
	return ExitError
}
