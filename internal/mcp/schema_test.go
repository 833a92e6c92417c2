package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/baton-agent/baton/internal/delivery"
)

// No tool argument, required or not, advertises null: a required list
// that takes null (files_add's paths did) is refused by the handler
// anyway, and some clients reject a type that is a list.
func TestNoToolArgumentTakesNull(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	noDB := func(context.Context) (*delivery.Service, error) { return nil, errors.New("not opened to list tools") }
	_, cs := connect(t, Options{Root: dir, WorkDir: dir, Deliveries: noDB}, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != len(allTools)+len(deliveryTools) {
		t.Fatalf("tools/list = %d tools, %v", len(list.Tools), err)
	}
	required := 0
	for _, tl := range list.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		var s struct {
			Properties map[string]struct {
				Type json.RawMessage `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: input schema %s: %v", tl.Name, b, err)
		}
		for name, p := range s.Properties {
			var one string
			if err := json.Unmarshal(p.Type, &one); err != nil {
				t.Errorf("%s.%s has type %s, want one type and no null (required: %v)", tl.Name, name, p.Type, slices.Contains(s.Required, name))
			}
		}
		required += len(s.Required)
	}
	if required == 0 {
		t.Fatal("no tool has a required argument: the check above saw nothing")
	}
	// The required list still refuses an empty value, with the reason.
	f := &fixture{t: t, dir: dir, cs: cs}
	if text, res := f.call("files_add", map[string]any{"paths": nil}); !res.IsError {
		t.Errorf("files_add with paths null:\n%s", text)
	}
}
