package cli

import (
	"encoding/json"
	"io"
)

// writeJSON writes v as indented JSON followed by a newline. Every JSON
// document baton prints starts with "schema_version".
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
