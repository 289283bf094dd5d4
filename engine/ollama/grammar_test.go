package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/engine"
	"hearth/scriptmodel"
	"hearth/toolgrammar"
)

const timeTool = `{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}`

// scriptSeam is the seam over a client whose every model is described as the tools
// script model (Show) and which generates nothing: Prepare renders the real prompt
// and checks grammars with the real llama.cpp, and needs no runtime for a short input.
func scriptSeam() engine.Runtime {
	return Seam(&showClient{show: &api.ShowResponse{Template: scriptmodel.Template, Parameters: `stop "<|end|>"`}})
}

func TestCheckGrammar(t *testing.T) {
	cases := []struct {
		schema string
		bad    string // "" when the runtime can use it; else a word of the reason
	}{
		{`{"type":"object"}`, ""},
		{`{}`, ""},
		{`{"type":"object","properties":{"city":{"type":"string","minLength":1,"maxLength":40}},"required":["city"]}`, ""},
		{`{"type":"string","pattern":"^(a|b+)*$"}`, ""},
		{`{"type":"string","format":"nope"}`, ""},
		{`{"type":"integer","minimum":5,"maximum":1}`, ""},
		{`{"const":"{3,1}"}`, ""}, // a literal, not a repetition
		{`{"type":"bogus"}`, "conversion"},
		{`{"$ref":"#/nope"}`, "does not resolve"},
		{`{"type":"string","pattern":"(a+)+"}`, "conversion"},
		{`{"type":"string","pattern":"((a*)*)*b"}`, "conversion"},
		{`{"type":"string","pattern":"[z-a]"}`, "conversion"},
		{`{"type":["string","bogus"]}`, "conversion"},
		{`{"type":"object","properties":{"a":{"type":"bogus"}}}`, "conversion"},
		{`{"type":"integer","minimum":-99999999999999999999}`, "between -2^53"},
		{`{"anyOf":[]}`, "parse"},
		{`{"type":"string","maxLength":100000}`, "parse"},
		{`{"type":"string","minLength":-1}`, "non-negative integer"},
		// What crashed the conversion, and the server with it, before schemaguard.
		{`{"allOf":[{"$ref":"#/$defs/x"}],"$defs":{"x":{"$ref":"#/$defs/x"}}}`, "refers to itself"},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, "refers to itself"},
		{`{"type":"string","pattern":"^` + strings.Repeat("(", 20000) + "a" + strings.Repeat(")", 20000) + `$"}`, "pattern"},
		{strings.Repeat(`{"type":"object","properties":{"a":`, 5000) + "{}" + strings.Repeat("}}", 5000), "nested"},
		{strings.Repeat(`{"type":"array","items":`, 10000) + "{}" + strings.Repeat("}", 10000), "nested"},
		{`{"type":"string","minLength":5,"maxLength":2}`, "repetitions"},
	}
	for _, tc := range cases {
		err := checkGrammar(context.Background(), []byte(tc.schema))
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s: %v", tc.schema, err)
		case tc.bad != "" && err == nil:
			t.Errorf("%s: accepted, want refused (%s)", tc.schema, tc.bad)
		case tc.bad != "" && !strings.Contains(err.Error(), tc.bad):
			t.Errorf("%s: %v, want a reason with %q", tc.schema, err, tc.bad)
		}
	}
}

// TestPrepareRefusesSchemasWithoutGrammar: a schema the runtime would have to turn
// into a grammar and cannot is a 400 naming it, before any generation; a bad model
// name is a 404.
func TestPrepareRefusesSchemasWithoutGrammar(t *testing.T) {
	bogus := `{"type":"object","properties":{"x":{"type":"bogus"}}}`
	fn := func(name, params string, strict bool) string {
		return `{"type":"function","name":"` + name + `","strict":` + strconv.FormatBool(strict) + `,"parameters":` + params + `}`
	}
	cases := []struct {
		name, body  string
		status      int // 0: prepared
		param, code string
	}{
		{"text.format schema", `"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"bogus"}}}`,
			400, "text.format.schema", hearth.CodeInvalidJSONSchema},
		{"text.format pattern with nested quantifiers", `"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"string","pattern":"(a+)+"}}}`,
			400, "text.format.schema", hearth.CodeInvalidJSONSchema},
		{"text.format usable", `"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			0, "", ""},
		{"strict tool", `"tools":[` + timeTool + `,` + fn("f", bogus, true) + `]`,
			400, "tools[1].parameters", hearth.CodeInvalidFunctionParameters},
		{"text.format with an unresolvable $ref", `"text":{"format":{"type":"json_schema","name":"n","schema":{"$ref":"#/nope"}}}`,
			400, "text.format.schema", hearth.CodeInvalidJSONSchema},
		// toolgrammar hoists a tool's schema under $defs, where the converter would
		// read a reference to nothing as any object; a reference to nothing is the
		// client's mistake all the same, as in text.format.
		{"strict tool with an unresolvable $ref", `"tools":[` + fn("f", `{"type":"object","properties":{"a":{"$ref":"#/nope"}}}`, true) + `]`,
			400, "tools[0].parameters", hearth.CodeInvalidFunctionParameters},
		{"tool_choice required with a $ref to nothing", `"tool_choice":"required","tools":[` + fn("f", `{"$ref":"#/nowhere"}`, false) + `]`,
			400, "tools[0].parameters", hearth.CodeInvalidFunctionParameters},
		{"strict tool with an allOf $ref cycle", `"tools":[` + fn("f", `{"type":"object","allOf":[{"$ref":"#/$defs/x"}],"$defs":{"x":{"$ref":"#/$defs/x"}}}`, true) + `]`,
			400, "tools[0].parameters", hearth.CodeInvalidFunctionParameters},
		{"strict tool, minLength above maxLength", `"tools":[` + fn("f", `{"type":"object","properties":{"a":{"type":"string","minLength":5,"maxLength":2}}}`, true) + `]`,
			400, "tools[0].parameters", hearth.CodeInvalidFunctionParameters},
		{"required constrains every tool", `"tool_choice":"required","tools":[` + timeTool + `,` + fn("f", bogus, false) + `]`,
			400, "tools[1].parameters", hearth.CodeInvalidFunctionParameters},
		{"namespace tool", `"tool_choice":"required","tools":[{"type":"namespace","name":"ns","description":"d","tools":[` + timeTool + `,` + fn("f", bogus, false) + `]}]`,
			400, "tools[0].tools[1].parameters", hearth.CodeInvalidFunctionParameters},
		{"a tool not allowed is not constrained", `"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_time"}]},"tools":[` + timeTool + `,` + fn("f", bogus, false) + `]`,
			0, "", ""},
		{"a tool only shown needs no grammar", `"tools":[` + fn("f", bogus, false) + `]`,
			0, "", ""},
	}
	run := func(label, body string, status int, param, code string) {
		t.Helper()
		req, _, err := hearth.DecodeCreateRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: decode: %v", label, err)
		}
		// The seam answers ErrModelNotFound for names it cannot parse.
		_, err = engine.New(scriptSeam(), engine.DefaultFormats(), nil).Prepare(context.Background(), req, nil, engine.Inputs{})
		if status == 0 {
			if err != nil {
				t.Errorf("%s: %v", label, err)
			}
			return
		}
		var he *hearth.Error
		if !errors.As(err, &he) || he.Status != status || he.Param != param || he.Code != code {
			t.Errorf("%s: error %v, want %d %s %s", label, err, status, param, code)
		}
	}
	for _, tc := range cases {
		run(tc.name, `{"model":"m","input":"hi",`+tc.body+`}`, tc.status, tc.param, tc.code)
	}
	for _, name := range []string{"../../etc/passwd", "a:b:c", "a/b/c/d/e"} {
		run(name, `{"model":"`+name+`","input":"hi"}`, 404, "model", hearth.CodeModelNotFound)
	}
}

// BenchmarkPrepareToolGrammars: what checking the grammars costs, the first time
// (check: the runtime's conversion and parse) and for schemas the engine has seen
// (check-remembered, every later turn of an agent loop), against the whole of Prepare
// (prepare, remembered check included), for a request that constrains every tool of
// Codex's first request (tool_choice required).
//
//	go test ./engine/ollama -run '^$' -bench PrepareToolGrammars
func BenchmarkPrepareToolGrammars(b *testing.B) {
	raw, err := os.ReadFile("../../testdata/codex_request.json")
	if err != nil {
		b.Skip(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		b.Fatal(err)
	}
	// Its tools, not its long instructions and input.
	body = map[string]any{"model": "m", "input": "hi", "tools": body["tools"], "tool_choice": "required"}
	raw, _ = json.Marshal(body)
	req, _, err := hearth.DecodeCreateRequest(raw)
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(scriptSeam(), engine.DefaultFormats(), nil)
	if _, err := e.Prepare(context.Background(), req, nil, engine.Inputs{}); err != nil {
		b.Fatal(err)
	}
	// The schemas Prepare checks: each function's arguments schema.
	var schemas [][]byte
	add := func(t hearth.Tool) {
		s, err := toolgrammar.ArgumentsSchema(toolgrammar.Tool{Name: t.Name, Parameters: t.Parameters})
		if err != nil {
			b.Fatal(err)
		}
		schemas = append(schemas, s)
	}
	for _, t := range req.Tools {
		switch t.Type {
		case hearth.ToolFunction:
			add(t)
		case hearth.ToolNamespace:
			for _, f := range t.Tools {
				add(f)
			}
		}
	}
	b.Run("prepare", func(b *testing.B) {
		for range b.N {
			if _, err := e.Prepare(context.Background(), req, nil, engine.Inputs{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		for range b.N {
			for _, s := range schemas {
				if err := checkGrammar(context.Background(), s); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("check-remembered", func(b *testing.B) {
		for range b.N {
			for _, s := range schemas {
				if err := e.CheckFormat(context.Background(), s); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
