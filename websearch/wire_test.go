package websearch_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"hearth"
	"hearth/internal/schematest"
	"hearth/websearch"
)

// A web_search_call as hearth writes it is OpenAI's item, and comes back unchanged
// as an input item (a stateless client sends its output back).
func TestWebSearchCallItem(t *testing.T) {
	for _, in := range []string{
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go generics"}}`,
		`{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"search","query":"q","sources":[{"type":"url","url":"https://a.example/x"}]}}`,
		`{"type":"web_search_call","id":"ws_3","status":"failed","action":{"type":"search","query":"q","sources":[]}}`,
		`{"type":"web_search_call","id":"ws_4","status":"completed","action":{"type":"open_page","url":"https://a.example/x"}}`,
	} {
		var it hearth.Item
		if err := json.Unmarshal([]byte(in), &it); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip:\n  got  %s\n  want %s", out, in)
		}
		schematest.WebSearch.Validate(t, "ItemField", json.RawMessage(out))
	}
}

// A search's events, in order, and the answer that names a result's URL annotated
// with a url_citation whose indexes are characters of the text.
func TestBuilderWebSearch(t *testing.T) {
	req := &hearth.CreateResponseRequest{Model: "m", Include: []string{websearch.IncludeWebSearchSources}}
	resp := hearth.NewResponse("resp_1", req, time.Unix(0, 0))
	var events []map[string]any
	var types []string
	b := hearth.NewBuilder(resp, func(e hearth.Event) {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		events = append(events, m)
		types = append(types, e.Type)
	})
	src := []websearch.WebSearchSource{{URL: "https://go.dev/doc", Title: "Go docs"}, {URL: "https://x.example/", Title: "X"}}
	steps := []func() error{
		func() error { return websearch.StartCall(b) },
		func() error { return b.ArgumentsDelta(`{"query":"go"}`) },
		func() error { return websearch.Searching(b, "go") },
		func() error { return websearch.EndCall(b, src, src, "[1] Go docs\nhttps://go.dev/doc", false) },
		func() error { return b.TextDelta("Sée https://go.dev/doc.") },
		func() error { return b.Complete(hearth.Usage{}) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching",
		"response.web_search_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.annotation.added", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("events:\n  got  %q\n  want %q", types, want)
	}
	schematest.WebSearch.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Error(err)
	}
	out := b.Response().Output
	call, _ := json.Marshal(out[0])
	if w := `{"type":"web_search_call","id":"` + out[0].ID + `","status":"completed","action":{"type":"search","query":"go","sources":[{"type":"url","url":"https://go.dev/doc"},{"type":"url","url":"https://x.example/"}]}}`; string(call) != w {
		t.Errorf("item:\n  got  %s\n  want %s", call, w)
	}
	got := out[1].Content[0].Annotations
	wantA := []hearth.Annotation{{Type: "url_citation", URL: "https://go.dev/doc", Title: "Go docs", StartIndex: 4, EndIndex: 22}}
	if !reflect.DeepEqual(got, wantA) {
		t.Errorf("annotations = %+v, want %+v", got, wantA)
	}
}
