package agentrun

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
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
		want string // substring of the error, "" for valid
	}{
		{"valid minimal", `{"verdict":"pass","summary":"ok"}`, ""},
		{"valid full", `{"verdict":"not_pass","summary":"s","feedback":null,"score":9,"files":[{"path":"a"}],"tag":"v1","id":"ab-12"}`, ""},
		{"integer as float", `{"verdict":"pass","summary":"s","score":3.0}`, ""},
		{"missing required", `{"verdict":"pass"}`, `$: missing required property "summary"`},
		{"enum", `{"verdict":"maybe","summary":"s"}`, `$.verdict: value "maybe" is not one of`},
		{"wrong type", `{"verdict":"pass","summary":5}`, `$.summary: got integer, want string`},
		{"type list", `{"verdict":"pass","summary":"s","feedback":3}`, `want string or null`},
		{"extra property", `{"verdict":"pass","summary":"s","x":1}`, `property "x" is not allowed`},
		{"minLength counts runes", `{"verdict":"pass","summary":""}`, `shorter than 1`},
		{"minimum", `{"verdict":"pass","summary":"s","score":-1}`, `less than the minimum 0`},
		{"exclusiveMaximum", `{"verdict":"pass","summary":"s","score":10}`, `is not less than 10`},
		{"not an integer", `{"verdict":"pass","summary":"s","score":1.5}`, `got number, want integer`},
		{"ref", `{"verdict":"pass","summary":"s","files":[{}]}`, `$.files[0]: missing required property "path"`},
		{"maxItems", `{"verdict":"pass","summary":"s","files":[{"path":"a"},{"path":"b"},{"path":"c"}]}`, `more than 2 items`},
		{"const", `{"verdict":"pass","summary":"s","tag":"v2"}`, `is not "v1"`},
		{"pattern", `{"verdict":"pass","summary":"s","id":"AB"}`, `does not match pattern`},
		{"not an object", `["pass"]`, `$: got array, want object`},
		{"not JSON", `{"verdict":`, `not valid JSON`},
		{"trailing data", `{"verdict":"pass","summary":"s"} {}`, `trailing data`},
		{"huge exponent", `{"verdict":"pass","summary":"s","score":1e999999999}`, `got number, want integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate([]byte(review), []byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate(%s) = %v, want nil", tt.doc, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate(%s) = %v, want an error containing %q", tt.doc, err, tt.want)
			}
		})
	}
}

func TestValidateCombinators(t *testing.T) {
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
		{`{"$ref":"#"}`, `1`, false}, // a cycle is reported, not looped on
		{`{"$ref":"#/nowhere"}`, `1`, false},
		{`{"format":"email","title":"ignored keywords"}`, `"x"`, true},
		{`{"enum":[1,{"a":[1]}]}`, `{"a":[1.0]}`, true},
		{`{"minProperties":1}`, `{}`, false},
	}
	for _, tt := range tests {
		err := Validate([]byte(tt.schema), []byte(tt.doc))
		if (err == nil) != tt.valid {
			t.Errorf("Validate(%s, %s) = %v, want valid=%v", tt.schema, tt.doc, err, tt.valid)
		}
	}
}

func TestValidateLimitsErrors(t *testing.T) {
	err := Validate([]byte(`{"required":["a","b","c","d","e","f","g"]}`), []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "and 2 more") {
		t.Errorf("Validate with 7 missing properties = %v, want five listed and \"and 2 more\"", err)
	}
}

// FuzzValidate feeds arbitrary schemas and documents: Validate must never
// panic or loop, and a document that is not JSON is always an error.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(testSchema), []byte(`{"status":"done","summary":"x"}`))
	f.Add([]byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`), []byte(`1`))
	f.Add([]byte(`{"items":{"anyOf":[{"not":{}},{"pattern":"("}]}}`), []byte(`[1,"a"]`))
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		err := Validate(schema, doc)
		if err == nil && decodeNumbers(doc, new(any)) != nil {
			t.Fatalf("Validate(%q, %q) = nil for a document that is not JSON", schema, doc)
		}
	})
}
