package web

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/baton-agent/baton"
)

// Codes the HTTP edge adds to baton's own, for failures only an edge
// has: who is asking, and how much.
const (
	codeUnauthorized baton.Code = "unauthorized"
	codeForbidden    baton.Code = "forbidden"
	codeTooLarge     baton.Code = "too_large"
	codeRateLimited  baton.Code = "rate_limited"
	codeTimeout      baton.Code = "timeout"
)

// statusOf is the one table from error codes to HTTP statuses.
func statusOf(code baton.Code) int {
	switch code {
	case baton.Invalid:
		return http.StatusBadRequest
	case codeUnauthorized:
		return http.StatusUnauthorized
	case codeForbidden:
		return http.StatusForbidden
	case baton.NotFound:
		return http.StatusNotFound
	case baton.Conflict:
		return http.StatusConflict
	case codeTimeout:
		return http.StatusRequestTimeout
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeRateLimited:
		return http.StatusTooManyRequests
	case baton.Unavailable, baton.Canceled:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// errorBody is every error response of the API.
type errorBody struct {
	Code    baton.Code `json:"code"`
	Message string     `json:"message"`
}

// classify turns any error into its code and user-safe message.
func classify(err error) (baton.Code, string) {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return codeTooLarge, "the request body is larger than 1 MiB"
	}
	code := baton.ErrorCode(err)
	msg := baton.ErrorMessage(err)
	if code == baton.Internal {
		msg = "internal error: the server log has the details"
	}
	return code, msg
}

// writeError renders err as the API's JSON error and logs the cause of
// internal errors.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := classify(err)
	status := statusOf(code)
	if status >= 500 && code != baton.Unavailable {
		s.log(r).Error("request failed", "err", err)
	}
	writeJSON(w, status, errorBody{Code: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// httpError is an error with one of the edge's codes.
func httpError(code baton.Code, msg string) error { return &baton.Error{Code: code, Message: msg} }
