package baton_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

func TestCheckTargetURL(t *testing.T) {
	t.Parallel()
	for u, ok := range map[string]bool{
		"https://hooks.slack.com/services/T/B/x": true, "http://127.0.0.1:9/x": true,
		"ftp://x": false, "https://user:pw@x.example/": false, "hooks.slack.com/x": false, "": false, "https://x.example/#frag": false,
	} {
		err := baton.CheckTargetURL("the target", u)
		if (err == nil) != ok {
			t.Errorf("CheckTargetURL(%q) = %v, want ok=%v", u, err, ok)
		}
		if err != nil && (strings.Contains(err.Error(), "pw") || baton.ErrorCode(err) != baton.Invalid) {
			t.Errorf("CheckTargetURL(%q) = %v: want Invalid, without the URL", u, err)
		}
	}
}
