package agentrun

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	const review = `{
	  "type": "object",
	  "properties": {
	    "verdict": {"type": "string", "enum": ["pass", "not_pass"]},
	    "summary": {"type": "string", "minLength": 1, "maxLength": 200},
	    "feedback": {"type": ["string", "null"]},
	    "score": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
	    "files": {"type": "array", "items": {"$ref": "#/$defs/file"}, "maxItems": 2},
	    "tag": {"const": "v1"},
	    "id": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}
	  },
	  "required": ["verdict", "summary"],
	  "additionalProperties": false,
	  "$defs": {"file": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}}
	}`
	tests := []struct {
		name string
		doc  string
		want string // the error, or a part of it when it ends in "…"; "" for valid
	}{
		{"valid minimal", `{"verdict":"pass","summary":"ok"}`, ""},
		{"valid full", `{"verdict":"not_pass","summary":"s","feedback":null,"score":9,"files":[{"path":"a"}],"tag":"v1","id":"ab-12"}`, ""},
		{"integer as float", `{"verdict":"pass","summary":"s","score":3.0}`, ""},
		{"missing required", `{"verdict":"pass"}`, `required: missing properties: ["summary"]`},
		{"enum", `{"verdict":"maybe","summary":"s"}`, `/properties/verdict: enum: maybe does not equal any of: [pass not_pass]`},
		{"wrong type", `{"verdict":"pass","summary":5}`, `/properties/summary: type: 5 has type "integer", want "string"`},
		{"type list", `{"verdict":"pass","summary":"s","feedback":3}`, `/properties/feedback: type: 3 has type "integer", want one of "string, null"`},
		{"extra property", `{"verdict":"pass","summary":"s","x":1}`, `unexpected additional properties ["x"]`},
		{"minLength counts runes", `{"verdict":"pass","summary":""}`, `/properties/summary: minLength: "" contains 0 Unicode code points, fewer than 1`},
		{"minimum", `{"verdict":"pass","summary":"s","score":-1}`, `/properties/score: minimum: …`},
		{"exclusiveMaximum", `{"verdict":"pass","summary":"s","score":10}`, `/properties/score: exclusiveMaximum: …`},
		{"not an integer", `{"verdict":"pass","summary":"s","score":1.5}`, `/properties/score: type: 1.5 has type "number", want "integer"`},
		{"ref: the innermost schema is named", `{"verdict":"pass","summary":"s","files":[{}]}`, `/$defs/file: required: missing properties: ["path"]`},
		{"maxItems", `{"verdict":"pass","summary":"s","files":[{"path":"a"},{"path":"b"},{"path":"c"}]}`, `/properties/files: maxItems: array length 3 is greater than 2`},
		{"const", `{"verdict":"pass","summary":"s","tag":"v2"}`, `/properties/tag: const: v2 does not equal v1`},
		{"pattern", `{"verdict":"pass","summary":"s","id":"AB"}`, `/properties/id: pattern: "AB" does not match regular expression "^[a-z]+-[0-9]+$"`},
		{"not an object", `["pass"]`, `type: [pass] has type "array", want "object"`},
		{"not JSON", `{"verdict":`, `not valid JSON: …`},
		{"trailing data", `{"verdict":"pass","summary":"s"} {}`, `not valid JSON: trailing data after the JSON value`},
		// No reader could hold it; the old validator called it a number
		// that is not an integer.
		{"huge exponent", `{"verdict":"pass","summary":"s","score":1e999999999}`, `a number 1e999999999 is out of range (beyond a 64-bit float)`},
	}
	for _, tt := range tests {
		err := Validate([]byte(review), []byte(tt.doc))
		prefix, partial := strings.CutSuffix(tt.want, "…")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate(%s) = %v, want nil", tt.name, tt.doc, err)
		case tt.want != "" && err == nil:
			t.Errorf("%s: Validate(%s) = nil, want %q", tt.name, tt.doc, tt.want)
		case tt.want != "" && !partial && err.Error() != tt.want,
			partial && !strings.HasPrefix(err.Error(), prefix):
			t.Errorf("%s: Validate(%s) = %q, want %q", tt.name, tt.doc, err, tt.want)
		}
	}
}

func TestValidateCombinators(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema, doc string
		valid       bool
	}{
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `3`, true},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, false},
		{`{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `3`, false},
		{`{"oneOf":[{"type":"number"},{"type":"string"}]}`, `3.5`, true},
		{`{"allOf":[{"minLength":2},{"maxLength":3}]}`, `"abcd"`, false},
		{`{"not":{"type":"null"}}`, `null`, false},
		{`{"properties":{"a":false}}`, `{"a":1}`, false},
		{`{"additionalProperties":{"type":"integer"}}`, `{"a":1,"b":"x"}`, false},
		{`{"format":"email","title":"ignored keywords"}`, `"x"`, true},
		{`{"enum":[1,{"a":[1]}]}`, `{"a":[1.0]}`, true},
		{`{"minProperties":1}`, `{}`, false},
		// Recursion that moves into the value ends with it.
		{`{"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}`, `{"next":{"next":{}}}`, true},
		{`{"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}`, `{"next":{"next":3}}`, false},
		{`{"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}}`, `[1,[2,[3]]]`, true},
		{`{"$ref":"#/$defs/no","$defs":{"no":false}}`, `1`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":{"$ref":"#/definitions/s"},"definitions":{"s":{"type":"string"}}}`, `["a",1]`, false},
	}
	for _, tt := range tests {
		err := Validate([]byte(tt.schema), []byte(tt.doc))
		if (err == nil) != tt.valid {
			t.Errorf("Validate(%s, %s) = %v, want valid=%v", tt.schema, tt.doc, err, tt.valid)
		}
	}
}

// A schema that cannot be checked is refused whatever the document, with
// a reason (want is the start of the error): jsonschema-go follows a $ref
// loop on one value until the stack overflows, which kills the process.
func TestValidateRefusesUncheckableSchemas(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ schema, want string }{
		{`{"$ref":"#"}`, `schema: $ref loop through "#" never moves into a part of the value`},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, `schema: $ref loop through "#/$defs/a"`},
		{`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `schema: $ref loop through`},
		{`{"if":{"$ref":"#"}}`, `schema: $ref loop through "#"`},
		{`{"$ref":"#/nowhere"}`, `schema: $ref "#/nowhere" at "#": only a local reference to a schema`},
		{`{"$ref":"#/properties","properties":{"a":{}}}`, `schema: $ref "#/properties" at "#": only a local reference to a schema`},
		{`{"$ref":"other.json#/x"}`, `schema: $ref "other.json#/x" at "#": only a local reference`},
		{`{"items":{"$dynamicRef":"#meta"}}`, `schema: $dynamicRef at "#/items" is not supported: use "$ref": "#/$defs/..."`},
		{`{"properties":{"a":{"$id":"https://example.com/a","$ref":"#"}}}`, `schema: $id at "#/properties/a" is not supported below the root`},
		{`{"items":{"anyOf":[{"not":{}},{"pattern":"("}]}}`, `schema cannot be used: `},
		{`{"type":5}`, `schema is not a JSON Schema: `},
		{`{"$schema":"http://json-schema.org/draft-04/schema#"}`, `schema: $schema "http://json-schema.org/draft-04/schema#" is not draft 2020-12 or draft-07, the drafts baton checks`},
		{`{"type":`, `schema is not valid JSON: `},
	} {
		if err := Validate([]byte(tt.schema), []byte(`1`)); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Validate(%s, 1) = %v, want %q", tt.schema, err, tt.want)
		}
	}
}

// newPlan refuses such a schema before the agent runs.
func TestCommandRefusesUncheckableSchema(t *testing.T) {
	t.Parallel()
	_, err := Command(Spec{Agent: "claude", Prompt: "x", OutputSchema: []byte(`{"$ref":"#"}`)})
	if baton.ErrorCode(err) != baton.Invalid || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "$ref loop") {
		t.Errorf("Command with a looping schema = %v, want an Invalid spec naming the loop", err)
	}
}

// An anyOf violation prints its schemas; the error stays one bounded line.
func TestValidateErrorIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"anyOf":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"string","minLength":` + strings.Repeat("1", 1+i%5) + `}`)
	}
	b.WriteString(`]}`)
	err := Validate([]byte(b.String()), []byte(`""`))
	if err == nil || len([]rune(err.Error())) > maxViolation || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "anyOf: ") {
		t.Errorf("Validate(200 anyOf) = %q (%d runes), want one anyOf line of at most %d", err, len([]rune(err.Error())), maxViolation)
	}
}

// FuzzValidate feeds arbitrary schemas and documents: Validate must never
// panic or overflow the stack; a document that is not JSON is always an
// error; and a document it accepts, written out again, is accepted again.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(testSchema), []byte(`{"status":"done","summary":"x"}`))
	f.Add([]byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`), []byte(`1`))
	f.Add([]byte(`{"items":{"anyOf":[{"not":{}},{"pattern":"("}]}}`), []byte(`[1,"a"]`))
	f.Add([]byte(`{"oneOf":[{"$ref":"#/$defs/x"},{"not":{"$ref":"#"}}],"$defs":{"x":{"items":{"$ref":"#"}}}}`), []byte(`[[1e308]]`))
	f.Add([]byte(`{"enum":[1,{"a":[1]}],"$defs":{"a~/b":{"$ref":"#/$defs/a~0~1b"}}}`), []byte(`{"a":[1.0]}`))
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		if Validate(schema, doc) != nil {
			return
		}
		var v any
		if decodeOne(doc, &v) != nil {
			t.Fatalf("Validate(%q, %q) = nil for a document that is not JSON", schema, doc)
		}
		again, _ := json.Marshal(v)
		if err := Validate(schema, again); err != nil {
			t.Fatalf("Validate(%q) accepted %q but refuses it written out again, %q: %v", schema, doc, again, err)
		}
	})
}
