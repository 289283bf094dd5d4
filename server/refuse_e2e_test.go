package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"hearth/scriptmodel"
)

// TestRefusedModelsAndSchemasE2E: over the real runtime, a model name it cannot parse
// is a 404 model_not_found (it answered 500), and a schema it cannot turn into a
// grammar is a 400 naming the field (it failed the generation with a 500), in JSON and
// in SSE requests alike.
func TestRefusedModelsAndSchemasE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain, tools := scriptmodel.PlainModel, scriptmodel.ToolsModel
	format := func(schema string) string {
		return `"input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":` + schema + `}}`
	}
	strictTool := func(params string) string {
		return `"input":"hi","tools":[{"type":"function","name":"get_time","parameters":{"type":"object"}},` +
			`{"type":"function","name":"f","strict":true,"parameters":` + params + `}]`
	}
	cases := []struct {
		name, model, extra string
		status             int
		param, code        string
	}{
		{"path as a model name", "../../etc/passwd", `"input":"hi"`, 404, "model", "model_not_found"},
		{"two tags", "a:b:c", `"input":"hi"`, 404, "model", "model_not_found"},
		{"unknown type", plain, format(`{"type":"bogus"}`), 400, "text.format.schema", "invalid_json_schema"},
		{"unresolvable $ref", plain, format(`{"$ref":"#/nope"}`), 400, "text.format.schema", "invalid_json_schema"},
		{"nested quantifiers", plain, format(`{"type":"string","pattern":"(a+)+"}`), 400, "text.format.schema", "invalid_json_schema"},
		{"strict tool of unknown type", tools, strictTool(`{"type":"object","properties":{"x":{"type":"bogus"}}}`), 400, "tools[1].parameters", "invalid_function_parameters"},
		// The runtime's grammar parser would allocate until memory runs out.
		{"strict tool, minLength above maxLength", tools, strictTool(`{"type":"object","properties":{"x":{"type":"string","minLength":5,"maxLength":2}}}`), 400, "tools[1].parameters", "invalid_function_parameters"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			label := tc.name + map[bool]string{false: " (json)", true: " (sse)"}[stream]
			resp, b := post(t, srv.URL+"/v1/responses", reqBody(tc.model, stream, tc.extra))
			var env struct {
				Error struct{ Message, Type, Param, Code string }
			}
			if err := json.Unmarshal(b, &env); err != nil || resp.StatusCode != tc.status ||
				env.Error.Param != tc.param || env.Error.Code != tc.code || env.Error.Message == "" {
				t.Errorf("%s: status %d %s, want %d with param %s, code %s", label, resp.StatusCode, b, tc.status, tc.param, tc.code)
			}
		}
	}
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(plain, false, format(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a usable schema: status %d: %s", resp.StatusCode, b)
	}
	for _, name := range []string{"a:b:c", "..%2F..%2Fetc%2Fpasswd"} {
		r, err := http.Get(srv.URL + "/v1/models/" + name)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("GET /v1/models/%s: status %d, want 404", name, r.StatusCode)
		}
	}
}
