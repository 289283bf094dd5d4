package hearth_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"hearth"
	"hearth/internal/schematest"
)

// Output items as hearth writes them. Each must be a valid ItemField, come
// back unchanged through Item, and decode as an input item (a stored output
// item is fed back as input on the next turn).
var outputItems = []string{
	`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[],"logprobs":[]},{"type":"refusal","refusal":"no"}],"phase":"final_answer"}`,
	`{"type":"message","id":"msg_2","status":"in_progress","role":"assistant","content":[]}`,
	`{"type":"message","id":"msg_3","status":"completed","role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_image","image_url":null,"file_id":"file_1","detail":"high"},{"type":"input_file","filename":"a.txt","file_url":"https://x/a.txt"}]}`,
	`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}","status":"completed"}`,
	`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"","status":"in_progress"}`,
	`{"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"{\"temp\":3}","status":"completed"}`,
	`{"type":"function_call_output","id":"fco_2","call_id":"call_1","output":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"https://x/y.png","detail":"auto"}],"status":"completed"}`,
	`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"r"}],"encrypted_content":"e","status":"completed"}`,
	`{"type":"reasoning","id":"rs_2","summary":[],"content":[],"status":"in_progress"}`,
	`{"type":"reasoning","id":"rs_3","summary":[],"status":"completed"}`,
	`{"type":"compaction","id":"cmp_1","encrypted_content":"xyz"}`,
}

// Input items as a client sends them, in hearth's canonical form. Each must
// be a valid ItemParam and come back unchanged through Item.
var inputItems = []string{
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"auto"},{"type":"input_file","filename":"a.pdf","file_data":"JVBERi0="}]}`,
	`{"type":"message","role":"system","content":[{"type":"input_text","text":"s"}]}`,
	`{"type":"message","role":"developer","content":[{"type":"input_text","text":"d"}]}`,
	`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"a","annotations":[{"type":"url_citation","url":"https://e","title":"E","start_index":0,"end_index":1}],"logprobs":[]}],"phase":"commentary"}`,
	`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`,
	`{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}","status":"completed"}`,
	`{"type":"function_call_output","call_id":"c","output":"1"}`,
	`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"t"},{"type":"input_video","video_url":"https://v/1.mp4"}]}`,
	`{"type":"item_reference","id":"msg_0"}`,
	`{"type":"compaction","encrypted_content":"x"}`,
	`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"}`,
}

// Items the schema has no type for. hearth supports them because OpenAI's
// clients use custom tools; a response containing one is not valid against the
// published schema, only against OpenAI's definitions (schematest.CustomTools).
var offSchemaItems = []string{
	`{"type":"custom_tool_call","id":"ctc_1","call_id":"call_1","name":"apply_patch","input":"*** Begin Patch","status":"completed"}`,
	`{"type":"custom_tool_call_output","call_id":"call_1","output":"ok"}`,
}

func roundTrip(t *testing.T, text string) hearth.Item {
	t.Helper()
	var it hearth.Item
	if err := json.Unmarshal([]byte(text), &it); err != nil {
		t.Fatalf("unmarshal %s: %v", text, err)
	}
	data, err := json.Marshal(it)
	if err != nil {
		t.Fatalf("marshal %+v: %v", it, err)
	}
	if string(data) != text {
		t.Errorf("round trip changed the item:\n  in:  %s\n  out: %s", text, data)
	}
	return it
}

func TestOutputItems(t *testing.T) {
	for _, text := range outputItems {
		it := roundTrip(t, text)
		schematest.Validate(t, "ItemField", []byte(text))

		// Fed back as input, through the request decoder.
		req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":[` + text + `]}`))
		if err != nil {
			t.Errorf("output item rejected as input: %v\n  %s", err, text)
			continue
		}
		if !reflect.DeepEqual(req.Input[0], it) {
			t.Errorf("as input: %+v\nas item: %+v", req.Input[0], it)
		}
	}
}

func TestInputItems(t *testing.T) {
	for _, text := range inputItems {
		roundTrip(t, text)
		schematest.Validate(t, "ItemParam", []byte(text))
	}
}

func TestOffSchemaItems(t *testing.T) {
	for _, text := range offSchemaItems {
		roundTrip(t, text)
		if err := schematest.Check("ItemField", []byte(text)); err == nil {
			t.Errorf("the schema now accepts %s: emit it in responses without caveat", text)
		}
		schematest.CustomTools.Validate(t, "ItemField", []byte(text))
		schematest.CustomTools.Validate(t, "ItemParam", []byte(text))
	}
}

func TestItemMarshalUnknownType(t *testing.T) {
	if _, err := json.Marshal(hearth.Item{Type: "file_search_call"}); err == nil {
		t.Error("marshalling an unknown item type succeeded")
	}
	if _, err := json.Marshal(hearth.ContentPart{Type: "output_audio"}); err == nil {
		t.Error("marshalling an unknown part type succeeded")
	}
}

func TestItemText(t *testing.T) {
	it := hearth.Item{Type: "message", Content: []hearth.ContentPart{
		{Type: "output_text", Text: "a"}, {Type: "refusal", Refusal: "b"}, {Type: "input_image", ImageURL: "https://x"}, {Type: "input_text", Text: "c"}}}
	if got := it.Text(); got != "abc" {
		t.Errorf("Text() = %q", got)
	}
	if got := it.Text("input_text"); got != "c" {
		t.Errorf("Text(input_text) = %q", got)
	}
}

func TestItemCloneIsIndependent(t *testing.T) {
	orig := hearth.Item{Type: "message", Content: []hearth.ContentPart{{Type: "output_text", Text: "a", Annotations: []hearth.Annotation{{URL: "u"}}}},
		Summary: []hearth.ContentPart{{Type: "summary_text"}}, Output: hearth.ToolOutput{Parts: []hearth.ContentPart{{Type: "input_text"}}}}
	c := orig.Clone()
	c.Content[0].Text = "changed"
	c.Content[0].Annotations[0].URL = "changed"
	c.Summary[0].Text = "changed"
	c.Output.Parts[0].Text = "changed"
	if orig.Content[0].Text != "a" || orig.Content[0].Annotations[0].URL != "u" || orig.Summary[0].Text != "" || orig.Output.Parts[0].Text != "" {
		t.Errorf("changing the clone changed the original: %+v", orig)
	}
}
