package web

import (
	_ "embed"
	"net/http"
)

// openAPIDoc describes every route of the API and its JSON shapes
// (OpenAPI 3.1). openapi_test.go checks it against the real handlers.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
	return nil
}
