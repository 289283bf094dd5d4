package hearth_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"hearth"
)

// FuzzDecodeCreateRequest: decoding never panics, fails only with a 400
// *hearth.Error, and a decoded request survives marshal and decode unchanged
// (storage relies on that).
func FuzzDecodeCreateRequest(f *testing.F) {
	codex, err := os.ReadFile("testdata/codex_request.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(codex)
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[],"tools":[],"metadata":{},"include":[]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]},{"id":"x"}],"tool_choice":"none"}`,
		`{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex","definition":"a+"}}],"tool_choice":{"type":"custom","name":"c"}}`,
		`{"model":"m","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"reasoning":{"generate_summary":"auto"}}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[]}],"stream_options":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, _, err := hearth.DecodeCreateRequest(body)
		if err != nil {
			var e *hearth.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("error %v is not a 400 *hearth.Error", err)
			}
			return
		}
		data, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, _, err := hearth.DecodeCreateRequest(data)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", data, err)
		}
		if !reflect.DeepEqual(again, req) {
			t.Fatalf("round trip changed the request:\n  %s", data)
		}
	})
}
