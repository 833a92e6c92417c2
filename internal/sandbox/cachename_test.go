package sandbox

import (
	"regexp"
	"testing"
)

// cacheName answers as the regular expression it replaced.
func FuzzCacheName(f *testing.F) {
	re := regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	for _, s := range []string{"my project", "ünï cödé", "a\xffb", "..x..", "a  b//c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := cacheName(s), re.ReplaceAllString(s, "-"); got != want {
			t.Fatalf("cacheName(%q) = %q, want %q", s, got, want)
		}
	})
}
