package frontmatter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// yamlFront reads front with a general YAML library, as the frontmatter
// was read before its own parser: the reference the subset must agree
// with.
func yamlFront(front string) ([]Entry, []*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		return nil, nil, err
	}
	if doc.Kind == 0 {
		return nil, nil, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil, fmt.Errorf("not one document")
	}
	m := doc.Content[0]
	if m.Kind == yaml.ScalarNode && m.ShortTag() == tagNull {
		return nil, nil, nil
	}
	if m.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("not a mapping")
	}
	lines := strings.SplitAfter(front, "\n")
	var entries []Entry
	var nodes []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, nil, fmt.Errorf("key is not a scalar")
		}
		end := len(lines)
		if i+2 < len(m.Content) {
			end = m.Content[i+2].Line - 1
		}
		entries = append(entries, Entry{Key: k.Value, Raw: strings.Join(lines[k.Line-1:end], "")})
		nodes = append(nodes, v)
	}
	return entries, nodes, nil
}

// sameNode reports how n differs from y. At the top level a plain
// scalar's type is left to the field's decoder, so only null must agree.
func sameNode(n *Node, y *yaml.Node, top bool) error {
	switch y.Kind {
	case yaml.ScalarNode:
		if n.Kind != ScalarNode {
			return fmt.Errorf("kind %d, YAML reads a scalar", n.Kind)
		}
		yt := y.ShortTag()
		switch {
		case (n.Tag == tagNull) != (yt == tagNull):
			return fmt.Errorf("tag %s, YAML reads %s", n.Tag, yt)
		case !top && n.Tag != yt:
			return fmt.Errorf("tag %s, YAML reads %s", n.Tag, yt)
		case n.Tag != tagNull && n.Value != y.Value:
			return fmt.Errorf("value %q, YAML reads %q", n.Value, y.Value)
		}
		return nil
	case yaml.SequenceNode, yaml.MappingNode:
		if (y.Kind == yaml.SequenceNode) != (n.Kind == SequenceNode) || n.Kind == ScalarNode {
			return fmt.Errorf("kind %d, YAML reads kind %d", n.Kind, y.Kind)
		}
		if len(n.Content) != len(y.Content) {
			return fmt.Errorf("%d items, YAML reads %d", len(n.Content), len(y.Content))
		}
		for i := range n.Content {
			if err := sameNode(n.Content[i], y.Content[i], false); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	}
	return fmt.Errorf("YAML reads node kind %d", y.Kind)
}

// checkAgainstYAML fails t when parseFront accepts front and reads it in
// any way other than the YAML library does; it reports whether it was
// accepted.
func checkAgainstYAML(t *testing.T, front string) bool {
	t.Helper()
	got, err := parseFront(front)
	if err != nil {
		return false
	}
	want, nodes, yerr := yamlFront(front)
	if yerr != nil {
		t.Fatalf("parseFront accepted what YAML refuses (%v):\n%q", yerr, front)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, YAML reads %d:\n%q", len(got), len(want), front)
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Raw != want[i].Raw {
			t.Fatalf("entry %d is %q %q, YAML reads %q %q:\n%q", i, got[i].Key, got[i].Raw, want[i].Key, want[i].Raw, front)
		}
		if err := sameNode(got[i].Node, nodes[i], true); err != nil {
			t.Fatalf("entry %q: %v:\n%q", got[i].Key, err, front)
		}
		// What the structured decoders see must be what YAML's generic
		// decoding gives.
		if got[i].Node.Kind != ScalarNode {
			var yg any
			if err := nodes[i].Decode(&yg); err != nil {
				t.Fatalf("entry %q: YAML cannot decode what it parsed: %v", got[i].Key, err)
			}
			mine, err := got[i].Node.jsonValue()
			if err != nil {
				t.Fatalf("entry %q: %v", got[i].Key, err)
			}
			theirs, err := marshalJSON(jsonable(yg))
			if err != nil {
				t.Fatalf("entry %q: %v", got[i].Key, err)
			}
			if !bytes.Equal(mine, theirs) {
				t.Fatalf("entry %q reads as %s, YAML as %s:\n%q", got[i].Key, mine, theirs, front)
			}
		}
	}
	return true
}

// FuzzFrontAgreesWithYAML: whatever the frontmatter parser accepts, a
// YAML library reads the same (keys, raw lines, kinds, values, and for
// lists and maps the same JSON); what it cannot read so, it refuses.
func FuzzFrontAgreesWithYAML(f *testing.F) {
	for _, s := range []string{
		"id: a\nstatus: draft\n",
		"purpose: \"x: y\"   # c\n# between\nlabels:\n  - one\n  - \"two\"\n",
		"x: [1, 2.5, -3, 1e5, true, null, \"s\", a/b.c]\n",
		"spent: {\"input\":100,\"unpriced\":[\"m\"],\"cost_usd\":0.42}\n",
		"p: 'it''s'\nq: ~\nr:\ns: NULL\n",
		"t: \"\\u00e9\\n\\t\\\\\\\"\\/\"\n",
		"a: 1\nb: 0x1F\nc: .inf\nd: yes\ne: 2026-11-22T09:34:00Z\nf: a[b]{c},d\n",
		"k:\n- a\n- b\nl: x\n",
		"x: [a, ]\n", "x: {a: 1}\n", "x: |\n  a\n", "x: &a 1\ny: *a\n", "x: !!str 1\n",
		"x: a\n  b\n", "x:\ty\n", "x: \"a\nb\"\n", "x: [\n1]\n", "? x\n: y\n", "x: 'a\n",
		"x: -1\ny: -a\nz: +1\n", "x: [-1, +1, 01, 1_0]\n", "x: \"a\"#b\n", "x: a #b\ny: a#b\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, front string) {
		if len(front) > MaxFront {
			return
		}
		checkAgainstYAML(t, front)
	})
}

// What baton writes is inside the subset: every value the writer makes of
// any text, list or JSON value is accepted and reads as YAML reads it.
func FuzzWrittenFrontIsRead(f *testing.F) {
	f.Add("plain words", "x: y", int64(3), 1.5)
	f.Add("", "\x7f\u0085\ufffe", int64(-1), 0.0)
	f.Add("null", "[not a list]", int64(1<<62), 1e300)
	f.Fuzz(func(t *testing.T, a, b string, n int64, x float64) {
		if x != x || x > 1e308 || x < -1e308 {
			return // JSON has no NaN or infinity
		}
		var buf bytes.Buffer
		w := writer{&buf}
		w.str("a", a)
		w.str("b", b)
		w.list("l", []string{a, b})
		w.json("j", map[string]any{"a": a, "b": []string{b}, "n": n, "x": x, "t": true, "z": nil})
		w.json("s", []any{a, n, x, map[string]any{}})
		if !checkAgainstYAML(t, buf.String()) {
			_, err := parseFront(buf.String())
			t.Fatalf("parseFront refuses what baton writes: %v\n%q", err, buf.String())
		}
	})
}

func marshalJSON(v any) ([]byte, error) { return json.Marshal(v) }

// jsonable makes what YAML decodes marshalable as JSON: its maps may have
// keys of any type, and its timestamps are times.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}
