package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"hearth"
)

// TestPrepareAsksRuntimeForGrammars: every schema Prepare would send as a format (the
// request's text.format, each constrained tool's arguments) is put to the runtime's
// CheckFormat; a refusal is a 400 naming the field, and each schema is asked about
// once. engine/ollama's tests check the real grammar conversion.
func TestPrepareAsksRuntimeForGrammars(t *testing.T) {
	// A schema the validator takes and this runtime does not.
	bogus := `{"type":"object","properties":{"bogus":{"type":"string"}}}`
	fn := func(name, params string, strict bool) string {
		return `{"type":"function","name":"` + name + `","strict":` + strconv.FormatBool(strict) + `,"parameters":` + params + `}`
	}
	cases := []struct {
		name, body  string
		status      int // 0: prepared
		param, code string
		asks        bool // the runtime is asked about some schema
	}{
		{"text.format schema", `"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"bogus"}}}`,
			400, "text.format.schema", hearth.CodeInvalidJSONSchema, true},
		{"text.format usable", `"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}}`,
			0, "", "", true},
		{"strict tool", `"tools":[` + timeTool + `,` + fn("f", bogus, true) + `]`,
			400, "tools[1].parameters", hearth.CodeInvalidFunctionParameters, true},
		{"required constrains every tool", `"tool_choice":"required","tools":[` + timeTool + `,` + fn("f", bogus, false) + `]`,
			400, "tools[1].parameters", hearth.CodeInvalidFunctionParameters, true},
		{"namespace tool", `"tool_choice":"required","tools":[{"type":"namespace","name":"ns","description":"d","tools":[` + timeTool + `,` + fn("f", bogus, false) + `]}]`,
			400, "tools[0].tools[1].parameters", hearth.CodeInvalidFunctionParameters, true},
		{"a tool not allowed is not constrained", `"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_time"}]},"tools":[` + timeTool + `,` + fn("f", bogus, false) + `]`,
			0, "", "", true},
		{"a tool only shown needs no grammar", `"tools":[` + fn("f", bogus, false) + `]`,
			0, "", "", false},
	}
	for _, tc := range cases {
		asked := map[string]int{}
		rt := &fakeRuntime{show: qwenShow(), badFormat: func(schema []byte) error {
			asked[string(schema)]++
			if strings.Contains(string(schema), "bogus") {
				return errors.New("no grammar for bogus")
			}
			return nil
		}}
		e := New(rt, DefaultFormats(), nil)
		for range 2 {
			req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":"hi",` + tc.body + `}`))
			if err != nil {
				t.Fatalf("%s: decode: %v", tc.name, err)
			}
			_, err = e.Prepare(context.Background(), req, nil, Inputs{})
			if tc.status == 0 {
				if err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
				continue
			}
			var he *hearth.Error
			if !errors.As(err, &he) || he.Status != tc.status || he.Param != tc.param || he.Code != tc.code || !strings.Contains(he.Message, "no grammar for bogus") {
				t.Errorf("%s: error %v, want %d %s %s with the runtime's reason", tc.name, err, tc.status, tc.param, tc.code)
			}
		}
		for schema, n := range asked {
			if n != 1 {
				t.Errorf("%s: asked %d times about %s", tc.name, n, schema)
			}
		}
		if tc.asks != (len(asked) > 0) {
			t.Errorf("%s: asked about %d schemas, want some: %v", tc.name, len(asked), tc.asks)
		}
		for schema := range asked {
			if tc.name == "a tool not allowed is not constrained" && strings.Contains(schema, "bogus") {
				t.Errorf("%s: asked about the tool not allowed", tc.name)
			}
		}
	}
}
