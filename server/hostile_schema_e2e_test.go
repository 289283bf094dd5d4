package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// hostileSchemas are schemas that took hearth down (a SIGSEGV inside the runtime's C++
// JSON-schema-to-grammar conversion, reached from hearth's own grammar check) or cost
// it minutes of CPU, each with a word of the 400's message. (Nested deeper than
// 10,000 levels, a body is not JSON to Go's decoder, hearth's or the runtime's: a 400
// before any schema is looked at.)
func hostileSchemas() map[string][2]string {
	manyRefs := func(n int) string {
		var props, defs []string
		for i := range n {
			props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
			defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, i))
		}
		return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`
	}
	return map[string][2]string{
		"allOf self ref":        {`{"type":"object","allOf":[{"$ref":"#/$defs/x"}],"$defs":{"x":{"$ref":"#/$defs/x"}}}`, "refers to itself"},
		"two-step ref cycle":    {`{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, "refers to itself"},
		"nested pattern groups": {`{"type":"object","properties":{"a":{"type":"string","pattern":"^` + strings.Repeat("(", 20000) + "a" + strings.Repeat(")", 20000) + `$"}}}`, "pattern"},
		"deep properties":       {strings.Repeat(`{"type":"object","properties":{"a":`, 2000) + `{"type":"string"}` + strings.Repeat("}}", 2000), "nested"},
		"deep items":            {`{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 4000) + `{"type":"string"}` + strings.Repeat("}", 4000) + "}}", "nested"},
		"3000 distinct refs":    {manyRefs(3000), "$ref keywords"},
		"a ref to nothing":      {`{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`, "#/nowhere"},
	}
}

// TestHostileSchemasE2E sends each hostile schema everywhere a schema reaches the
// grammar conversion: a 400 naming the field each time, and hearth still serves.
func TestHostileSchemasE2E(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.PlainModel)
	testenv.Model(t, scriptmodel.ToolsModel)
	places := []struct {
		path, param, code string
		body              func(schema string) string
	}{
		{"/v1/responses", "text.format.schema", "invalid_json_schema", func(s string) string {
			return `{"model":"` + scriptmodel.PlainModel + `","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":` + s + `}}}`
		}},
		{"/v1/responses", "tools[0].parameters", "invalid_function_parameters", func(s string) string {
			return `{"model":"` + scriptmodel.ToolsModel + `","input":"hi","tool_choice":"required","tools":[{"type":"function","name":"f","parameters":` + s + `}]}`
		}},
		{"/v1/responses", "tools[0].parameters", "invalid_function_parameters", func(s string) string {
			return `{"model":"` + scriptmodel.ToolsModel + `","input":"hi","tools":[{"type":"function","name":"f","strict":true,"parameters":` + s + `}]}`
		}},
		{"/api/generate", "format", "invalid_json_schema", func(s string) string {
			return `{"model":"` + scriptmodel.PlainModel + `","prompt":"hi","stream":false,"format":` + s + `}`
		}},
		{"/api/chat", "format", "invalid_json_schema", func(s string) string {
			return `{"model":"` + scriptmodel.PlainModel + `","stream":false,"messages":[{"role":"user","content":"hi"}],"format":` + s + `}`
		}},
		{"/v1/chat/completions", "response_format.json_schema.schema", "invalid_json_schema", func(s string) string {
			return `{"model":"` + scriptmodel.PlainModel + `","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + s + `}}}`
		}},
	}
	for name, hs := range hostileSchemas() {
		for _, p := range places {
			label := name + " as " + p.path + " " + p.param
			start := time.Now()
			st, h, b := send(t, "POST", srv.URL+p.path, p.body(hs[0]), map[string]string{"Content-Type": "application/json"})
			t.Logf("%s: %d in %s", label, st, time.Since(start).Round(time.Millisecond))
			if st != http.StatusBadRequest {
				t.Errorf("%s: %d %.300s, want 400", label, st, b)
				continue
			}
			code, param := envelope(t, label, h, b)
			if param != p.param || code != p.code || !strings.Contains(string(b), hs[1]) {
				t.Errorf("%s: %s %s %.300s, want %s %s and %q", label, code, param, b, p.param, p.code, hs[1])
			}
		}
	}
	// A whole schema of 8 MiB is refused where it would be converted whole. (A tool's
	// parameters are converted as the keywords a grammar can use: its descriptions
	// never reach the conversion.)
	huge := `{"type":"object","description":"` + strings.Repeat("x", 8<<20) + `"}`
	for _, p := range places {
		if p.param == "tools[0].parameters" {
			continue
		}
		st, h, b := send(t, "POST", srv.URL+p.path, p.body(huge), map[string]string{"Content-Type": "application/json"})
		if code, param := envelope(t, "8 MiB", h, b); st != http.StatusBadRequest || param != p.param || code != p.code || !strings.Contains(string(b), "bytes; at most") {
			t.Errorf("8 MiB schema as %s %s: %d %.300s", p.path, p.param, st, b)
		}
	}
	// Still serving: a plain response completes.
	resp := postJSON(t, srv.URL+"/v1/responses", map[string]any{"model": scriptmodel.PlainModel, "input": "hi"})
	b, _ := io.ReadAll(resp.Body)
	var r struct{ Status string }
	if json.Unmarshal(b, &r); resp.StatusCode != 200 || r.Status != "completed" {
		t.Fatalf("after the hostile schemas: %s %.300s", resp.Status, b)
	}
}

// TestUnsatisfiableToolSchemasE2E: tool parameters no call can satisfy, under a
// tool_choice that forces a call, and a custom tool's regex that the grammar cannot
// take, are the client's 400 naming the tool, not a generation that fails as
// hearth's 500.
func TestUnsatisfiableToolSchemasE2E(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.ToolsModel)
	cases := []struct {
		name, tools, param, word string
	}{
		{"not an object", `[{"type":"function","name":"f","parameters":{"type":"string"}}]`, "tools[0].parameters", "must describe a JSON object"},
		{"multipleOf 0", `[{"type":"function","name":"f","parameters":{"type":"object","properties":{"n":{"type":"number","multipleOf":0}},"required":["n"]}}]`, "tools[0].parameters", "multipleOf"},
		{"minimum above maximum", `[{"type":"function","name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":10,"maximum":1}},"required":["n"]}}]`, "tools[0].parameters", "no value satisfies"},
		{"a required property additionalProperties forbids", `[{"type":"function","name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["city"],"additionalProperties":false}}]`, "tools[0].parameters", "which properties does not describe"},
		{"a ref to nowhere", `[{"type":"function","name":"f","parameters":{"$ref":"#/nowhere"}}]`, "tools[0].parameters", "nowhere"},
		{"a string forced to 2,000 characters", `[{"type":"function","name":"f","parameters":{"type":"object","properties":{"s":{"type":"string","minLength":2000}},"required":["s"]}}]`, "tools[0].parameters", "minLength 2000"},
		{"a regex repeat count over the limit", `[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex","definition":"^((a*)*)*(b|c{2000}){1000}$"}}]`, "tools[0].format.definition", "repeat count"},
	}
	for _, c := range cases {
		body := `{"model":"` + scriptmodel.ToolsModel + `","input":"hi","tool_choice":"required","tools":` + c.tools + `}`
		st, h, b := send(t, "POST", srv.URL+"/v1/responses", body, map[string]string{"Content-Type": "application/json"})
		if st != http.StatusBadRequest {
			t.Errorf("%s: %d %.400s, want 400", c.name, st, b)
			continue
		}
		if _, param := envelope(t, c.name, h, b); param != c.param || !strings.Contains(string(b), c.word) {
			t.Errorf("%s: %.400s, want param %s and %q", c.name, b, c.param, c.word)
		}
	}
}
