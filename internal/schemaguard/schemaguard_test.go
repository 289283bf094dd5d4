package schemaguard

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// nested wraps inner in n levels of open/close.
func nested(open, inner, close string, n int) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

func TestCheckRefuses(t *testing.T) {
	manyRefs := func(n int) string {
		var props, defs []string
		for i := range n {
			props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
			defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, i))
		}
		return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`
	}
	cases := []struct {
		name, schema, want string
	}{
		{"allOf self ref", `{"allOf":[{"$ref":"#/$defs/x"}],"$defs":{"x":{"$ref":"#/$defs/x"}}}`, "refers to itself"},
		{"two-step ref cycle", `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, "refers to itself"},
		{"anyOf cycle", `{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}`, "refers to itself"},
		{"allOf of root", `{"allOf":[{"$ref":"#"}]}`, "refers to itself"},
		{"unresolved ref", `{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`, `"#/nowhere" does not resolve`},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "must point into the schema itself"},
		{"ref not a string", `{"$ref":7}`, "$ref must be a string"},
		{"long ref", `{"$ref":"#/` + strings.Repeat("-", 1000) + `"}`, "at most 512"},
		{"too many refs", manyRefs(300), "more than 256 $ref"},
		{"deep properties", nested(`{"type":"object","properties":{"a":`, `{"type":"string"}`, `}}`, 5000), "nested"},
		{"deep items", nested(`{"type":"array","items":`, `{"type":"string"}`, `}`, 10000), "nested"},
		{"nested pattern groups", `{"type":"string","pattern":"^` + nested("(", "a", ")", 20000) + `$"}`, "at most 4096"},
		{"pattern nesting", `{"type":"string","pattern":"^` + nested("(", "a", ")", 40) + `$"}`, "nests groups more than 32"},
		{"too big", `{"description":"` + strings.Repeat("x", 300<<10) + `"}`, "bytes; at most"},
		{"not an object", `[1,2]`, "must be a JSON object"},
		{"not JSON", `{"type":`, "not valid JSON"},
		{"negative length", `{"type":"string","minLength":-1}`, "non-negative integer"},
		{"fractional items", `{"type":"array","items":{},"maxItems":2.5}`, "non-negative integer"},
		{"huge bound", `{"type":"integer","minimum":1e300}`, "between -2^53 and 2^53"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check([]byte(c.schema))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, c.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
		})
	}
}

func TestCheckAccepts(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		// A tree: the recursion goes through properties and items.
		`{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"$defs":{"node":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}}}},"$ref":"#/$defs/node"}`,
		`{"allOf":[{"$ref":"#/$defs/base"},{"properties":{"b":{"type":"string"}}}],"$defs":{"base":{"properties":{"a":{"type":"integer"}}}}}`,
		`{"type":"object","properties":{"pattern":{"type":"string","pattern":"^(a|b)+[()]$"},"a~b/c":{"type":"string"}},"$defs":{"x/y":{"type":"string"}}}`,
		`{"type":"object","properties":{"p":{"$ref":"#/properties/q"},"q":{"type":"string"}}}`,
		`{"type":"integer","minimum":-9007199254740992,"maximum":10}`,
		nested(`{"type":"object","properties":{"a":`, `{"type":"string"}`, `}}`, 20),
	} {
		if err := Check([]byte(s)); err != nil {
			t.Errorf("Check(%s) = %v", s, err)
		}
	}
}

func TestPointerInError(t *testing.T) {
	err := Check([]byte(`{"type":"object","properties":{"a":{"type":"string","minLength":-3}}}`))
	var e *Error
	if !errors.As(err, &e) || e.Pointer != "#/properties/a/minLength" {
		t.Fatalf("error %v, want pointer #/properties/a/minLength", err)
	}
}
