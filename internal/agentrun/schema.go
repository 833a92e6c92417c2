package agentrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validate checks the JSON document doc against a JSON Schema (draft
// 2020-12, or draft-07 when its $schema says so), with
// github.com/google/jsonschema-go. It returns nil, or an error naming the
// first violation: its keyword, where in the schema, and the value. A
// schema the library cannot check safely is an error too (see
// compileSchema). A number beyond float64's range is refused: no reader
// of the document could hold it.
func Validate(schema, doc []byte) error {
	rs, err := compileSchema(schema)
	if err != nil {
		return err
	}
	var v any
	if err := decodeOne(doc, &v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
			return fmt.Errorf("a %s is out of range (beyond a 64-bit float)", te.Value)
		}
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if err := rs.Validate(v); err != nil {
		return errors.New(oneLine(violation(err.Error()), maxViolation))
	}
	return nil
}

// violation shortens the library's message: it says "validating <schema
// location>: " for every schema on the way down; the innermost is kept.
func violation(msg string) string {
	where := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		i := strings.Index(rest, ": ")
		if !ok || i < 0 {
			break
		}
		where, msg = rest[:i], rest[i+2:]
	}
	if where != "" && where != "root" {
		msg = where + ": " + msg
	}
	return msg
}

// maxViolation bounds the error text (on one line): anyOf and oneOf
// violations print their schemas.
const maxViolation = 400

// compileSchema parses and resolves schema. Besides what the library
// refuses (malformed keywords, a pattern that is not a regular
// expression, a $ref that leads nowhere, a draft it does not know), it
// refuses what the library would follow forever (see checkRefs). An
// Invalid spec error at newPlan, so the agent never runs for an answer
// that cannot be checked.
func compileSchema(schema []byte) (*jsonschema.Resolved, error) {
	var raw any
	if err := decodeOne(schema, &raw); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if err := checkRefs(raw); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("schema is not a JSON Schema: %w", err)
	}
	switch s.Schema {
	case "", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
	default:
		return nil, fmt.Errorf("schema: $schema %q is not draft 2020-12 or draft-07, the drafts baton checks", s.Schema)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema cannot be used: %w", err)
	}
	return rs, nil
}

// decodeOne decodes exactly one JSON value from b into v.
func decodeOne(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// schemaKeys are the keywords that hold schemas; named ones hold an
// object of them (properties, $defs). sameValue says the schema applies
// to the value itself, not to one of its parts (a property, an item),
// so following it does not move deeper into the document.
var schemaKeys = map[string]struct{ named, sameValue bool }{
	"$defs":                 {named: true},
	"definitions":           {named: true},
	"properties":            {named: true},
	"patternProperties":     {named: true},
	"additionalProperties":  {},
	"propertyNames":         {},
	"unevaluatedProperties": {},
	"items":                 {},
	"prefixItems":           {},
	"additionalItems":       {},
	"contains":              {},
	"unevaluatedItems":      {},
	"contentSchema":         {},
	"allOf":                 {sameValue: true},
	"anyOf":                 {sameValue: true},
	"oneOf":                 {sameValue: true},
	"not":                   {sameValue: true},
	"if":                    {sameValue: true},
	"then":                  {sameValue: true},
	"else":                  {sameValue: true},
	"dependentSchemas":      {named: true, sameValue: true},
	"dependencies":          {named: true, sameValue: true},
}

// sameValueKeys are schemaKeys' same-value keywords in a fixed order, so
// the same loop is reported every time.
var sameValueKeys = slices.Sorted(func(yield func(string) bool) {
	for k, kind := range schemaKeys {
		if kind.sameValue && !yield(k) {
			return
		}
	}
})

// checkRefs refuses the references jsonschema-go (v0.4.3) would follow
// without end: a $ref loop that comes back to a schema of the same value
// ({"$ref": "#"}, or two $defs naming each other) recurses until the
// stack overflows, which kills the process (no recover catches it). So
// that every reference can be followed here, only local JSON pointers
// ("#", "#/$defs/x") are allowed, no $id below the root (it would move
// their base) and no dynamic references.
func checkRefs(root any) error {
	nodes := map[string]map[string]any{} // every schema, by JSON pointer
	var collect func(ptr string, s any) error
	collect = func(ptr string, s any) error {
		obj, _ := s.(map[string]any) // nil for true and false
		nodes[ptr] = obj
		if _, ok := obj["$id"]; ok && ptr != "" {
			return fmt.Errorf("$id at %q is not supported below the root", "#"+ptr)
		}
		for _, k := range []string{"$dynamicRef", "$recursiveRef"} {
			if _, ok := obj[k]; ok {
				return fmt.Errorf("%s at %q is not supported: use \"$ref\": \"#/$defs/...\"", k, "#"+ptr)
			}
		}
		for k, kind := range schemaKeys {
			if err := children(ptr+"/"+k, obj[k], kind.named, collect); err != nil {
				return err
			}
		}
		return nil
	}
	if err := collect("", root); err != nil {
		return err
	}
	// A depth-first search over "applies to the same value" edges: a
	// schema met again while still on the path is a loop.
	const onPath, finished = 1, 2
	state := map[string]int{}
	var visit func(ptr string) error
	visit = func(ptr string) error {
		switch state[ptr] {
		case onPath:
			return fmt.Errorf("$ref loop through %q never moves into a part of the value", "#"+ptr)
		case finished:
			return nil
		}
		state[ptr] = onPath
		obj := nodes[ptr]
		var next []string
		if ref, ok := obj["$ref"]; ok {
			target, err := refPointer(ref)
			if _, known := nodes[target]; err != nil || !known {
				text, _ := json.Marshal(ref)
				return fmt.Errorf("$ref %s at %q: only a local reference to a schema (\"#/$defs/x\") is supported", text, "#"+ptr)
			}
			next = append(next, target)
		}
		for _, k := range sameValueKeys {
			_ = children(ptr+"/"+k, obj[k], schemaKeys[k].named, func(p string, _ any) error {
				next = append(next, p)
				return nil
			})
		}
		for _, n := range next {
			if err := visit(n); err != nil {
				return err
			}
		}
		state[ptr] = finished
		return nil
	}
	for _, ptr := range slices.Sorted(maps.Keys(nodes)) {
		if err := visit(ptr); err != nil {
			return err
		}
	}
	return nil
}

// children calls f on each schema v holds: v itself, each element of a
// list, or with named each value of an object.
func children(ptr string, v any, named bool, f func(ptr string, s any) error) error {
	switch v := v.(type) {
	case []any:
		if named {
			return nil // not an object of schemas: the library refuses it
		}
		for i, c := range v {
			if err := f(ptr+"/"+strconv.Itoa(i), c); err != nil {
				return err
			}
		}
	case map[string]any:
		if !named {
			return f(ptr, v)
		}
		for name, c := range v {
			if err := f(ptr+"/"+escapePointer(name), c); err != nil {
				return err
			}
		}
	case bool:
		if !named {
			return f(ptr, v)
		}
	}
	return nil
}

// refPointer is the JSON pointer of a local reference ("#" or "#/a/b"),
// each token in its escaped form.
func refPointer(ref any) (string, error) {
	s, _ := ref.(string)
	if s == "#" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(s, "#/")
	if !ok {
		return "", fmt.Errorf("%q is not a local JSON pointer", s)
	}
	var ptr strings.Builder
	for _, tok := range strings.Split(rest, "/") {
		ptr.WriteString("/" + escapePointer(strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")))
	}
	return ptr.String(), nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
