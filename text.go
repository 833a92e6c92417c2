package baton

import "unicode/utf8"

// Truncate returns s cut to at most n bytes on a UTF-8 boundary, with
// marker appended when it cut. Every place that shortens text for a
// person or a model cuts this way, so no message ends in half a
// character; the marker says what kind of cut it was ("…" in messages,
// "\n[truncated]" in prompts).
func Truncate(s string, n int, marker string) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + marker
}
