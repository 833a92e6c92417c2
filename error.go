package baton

import (
	"errors"
	"fmt"
)

// Code classifies an error. Each edge maps it once: the CLI to an exit
// code, the hooks to their harness contract, the queue to a retry decision.
type Code string

const (
	Internal    Code = "internal"
	Invalid     Code = "invalid"
	NotFound    Code = "not_found"
	Conflict    Code = "conflict"
	Unavailable Code = "unavailable" // retryable: rate limit, lock held, network
	Canceled    Code = "canceled"    // the user said no, or interrupted
)

// Error is an application error. Message is safe to show to users and
// agents; Err is the cause, kept for logs and errors.Is/As.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Message
	}
	if e.Message == "" {
		return e.Err.Error()
	}
	// A cause with no text of its own (a sentinel the message already
	// states) adds nothing.
	if cause := e.Err.Error(); cause != "" {
		return e.Message + ": " + cause
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted, user-safe message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with code and message that keeps err as its
// cause. It returns nil when err is nil.
func WrapError(code Code, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the Code of the first *Error in err's chain, Internal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the user-safe message: Message of the first *Error,
// or "internal error" for anything else.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		if e.Message == "" {
			return ErrorMessage(e.Err)
		}
		return e.Message
	}
	return "internal error"
}
