package agentrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validate checks the JSON document doc against a JSON Schema. It covers
// the keywords structured-output schemas use: type (also as a list),
// properties, required, additionalProperties, items, enum, const,
// minLength, maxLength, pattern, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, minItems, maxItems, minProperties, maxProperties,
// allOf, anyOf, oneOf, not, and local $ref ("#/$defs/x",
// "#/definitions/x"). Other keywords (format, $schema, title, ...) are
// ignored. It returns nil, or an error listing up to five violations with
// their JSON paths.
func Validate(schema, doc []byte) error {
	var root any
	if err := decodeNumbers(schema, &root); err != nil {
		return fmt.Errorf("schema is not valid JSON: %w", err)
	}
	var v any
	if err := decodeNumbers(doc, &v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	c := &schemaCheck{root: root}
	c.check(root, v, "$", 0)
	if len(c.errs) == 0 {
		return nil
	}
	msg := strings.Join(c.errs, "; ")
	if c.more > 0 {
		msg += fmt.Sprintf("; and %d more", c.more)
	}
	return fmt.Errorf("%s", msg)
}

func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

type schemaCheck struct {
	root any
	errs []string
	more int
}

// maxSchemaDepth stops $ref cycles and absurd nesting.
const maxSchemaDepth = 64

func (c *schemaCheck) fail(path, format string, args ...any) {
	if len(c.errs) >= 5 {
		c.more++
		return
	}
	c.errs = append(c.errs, path+": "+fmt.Sprintf(format, args...))
}

// valid reports whether v matches s without recording errors.
func (c *schemaCheck) valid(s, v any, path string, depth int) bool {
	sub := &schemaCheck{root: c.root}
	sub.check(s, v, path, depth)
	return len(sub.errs) == 0
}

func (c *schemaCheck) check(s, v any, path string, depth int) {
	if depth > maxSchemaDepth {
		c.fail(path, "schema nested too deeply (a $ref cycle?)")
		return
	}
	switch s := s.(type) {
	case bool:
		if !s {
			c.fail(path, "no value is allowed here")
		}
		return
	case map[string]any:
		c.checkObject(s, v, path, depth)
	default:
		// Not a schema: nothing to check against.
	}
}

func (c *schemaCheck) checkObject(s map[string]any, v any, path string, depth int) {
	if ref, ok := s["$ref"].(string); ok {
		target, ok := c.resolve(ref)
		if !ok {
			c.fail(path, "cannot resolve $ref %q", ref)
			return
		}
		c.check(target, v, path, depth+1)
	}
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		c.fail(path, "got %s, want %s", jsonType(v), typeNames(t))
		return
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if jsonEqual(x, v) {
				found = true
				break
			}
		}
		if !found {
			c.fail(path, "value %s is not one of %s", short(v), short(e))
		}
	}
	if x, ok := s["const"]; ok && !jsonEqual(x, v) {
		c.fail(path, "value %s is not %s", short(v), short(x))
	}
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if m, ok := intKeyword(s, "minLength"); ok && n < m {
			c.fail(path, "string shorter than %d characters", m)
		}
		if m, ok := intKeyword(s, "maxLength"); ok && n > m {
			c.fail(path, "string longer than %d characters", m)
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(v) {
				c.fail(path, "string does not match pattern %q", p)
			}
		}
	case json.Number:
		c.checkNumber(s, v, path)
	case []any:
		if m, ok := intKeyword(s, "minItems"); ok && len(v) < m {
			c.fail(path, "fewer than %d items", m)
		}
		if m, ok := intKeyword(s, "maxItems"); ok && len(v) > m {
			c.fail(path, "more than %d items", m)
		}
		if items, ok := s["items"]; ok {
			for i, x := range v {
				c.check(items, x, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
		}
	case map[string]any:
		c.checkProperties(s, v, path, depth)
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		list, ok := s[key].([]any)
		if !ok {
			continue
		}
		n := 0
		for _, sub := range list {
			if key == "allOf" {
				c.check(sub, v, path, depth+1)
			} else if c.valid(sub, v, path, depth+1) {
				n++
			}
		}
		switch {
		case key == "anyOf" && n == 0:
			c.fail(path, "value matches none of the anyOf schemas")
		case key == "oneOf" && n != 1:
			c.fail(path, "value matches %d of the oneOf schemas, want exactly 1", n)
		}
	}
	if not, ok := s["not"]; ok && c.valid(not, v, path, depth+1) {
		c.fail(path, "value matches a schema it must not match")
	}
}

func (c *schemaCheck) checkProperties(s map[string]any, v map[string]any, path string, depth int) {
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				if _, ok := v[name]; !ok {
					c.fail(path, "missing required property %q", name)
				}
			}
		}
	}
	if m, ok := intKeyword(s, "minProperties"); ok && len(v) < m {
		c.fail(path, "fewer than %d properties", m)
	}
	if m, ok := intKeyword(s, "maxProperties"); ok && len(v) > m {
		c.fail(path, "more than %d properties", m)
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys) // stable error order
	additional, hasAdditional := s["additionalProperties"]
	for _, k := range keys {
		p := path + "." + k
		if ps, ok := props[k]; ok {
			c.check(ps, v[k], p, depth+1)
			continue
		}
		if !hasAdditional {
			continue
		}
		if b, ok := additional.(bool); ok && !b {
			c.fail(path, "property %q is not allowed", k)
			continue
		}
		c.check(additional, v[k], p, depth+1)
	}
}

func (c *schemaCheck) checkNumber(s map[string]any, v json.Number, path string) {
	// float64 is precise enough for bounds, and unlike big.Rat it cannot
	// be made to allocate without limit by an exponent like 1e999999999.
	x, err := v.Float64()
	if err != nil && !math.IsInf(x, 0) {
		return
	}
	bound := func(key string) (json.Number, float64, bool) {
		n, ok := s[key].(json.Number)
		if !ok {
			return "", 0, false
		}
		f, err := n.Float64()
		return n, f, err == nil || math.IsInf(f, 0)
	}
	if n, b, ok := bound("minimum"); ok && x < b {
		c.fail(path, "%s is less than the minimum %s", v, n)
	}
	if n, b, ok := bound("maximum"); ok && x > b {
		c.fail(path, "%s is more than the maximum %s", v, n)
	}
	if n, b, ok := bound("exclusiveMinimum"); ok && x <= b {
		c.fail(path, "%s is not more than %s", v, n)
	}
	if n, b, ok := bound("exclusiveMaximum"); ok && x >= b {
		c.fail(path, "%s is not less than %s", v, n)
	}
}

// resolve follows a local JSON pointer such as "#/$defs/item".
func (c *schemaCheck) resolve(ref string) (any, bool) {
	if ref == "#" {
		return c.root, true
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	cur := c.root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch node := cur.(type) {
		case map[string]any:
			if cur, ok = node[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func intKeyword(s map[string]any, key string) (int, bool) {
	n, ok := s[key].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != float64(int(f)) {
			return 0, false
		}
		i = int(f)
	}
	return i, true
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if isInteger(v) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func isInteger(n json.Number) bool {
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f)
}

func typeMatches(t, v any) bool {
	switch t := t.(type) {
	case string:
		got := jsonType(v)
		return got == t || (t == "number" && got == "integer")
	case []any:
		for _, x := range t {
			if typeMatches(x, v) {
				return true
			}
		}
		return false
	}
	return true // malformed "type": ignore it
}

func typeNames(t any) string {
	if list, ok := t.([]any); ok {
		var names []string
		for _, x := range list {
			names = append(names, fmt.Sprint(x))
		}
		return strings.Join(names, " or ")
	}
	return fmt.Sprint(t)
}

func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		x, err1 := a.Float64()
		y, err2 := bn.Float64()
		return err1 == nil && err2 == nil && x == y
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, x := range a {
			y, ok := bm[k]
			if !ok || !jsonEqual(x, y) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// short renders v as compact JSON, cut for error messages.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return oneLine(string(b), 80)
}
