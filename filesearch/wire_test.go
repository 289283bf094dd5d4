package filesearch_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"hearth"
	"hearth/filesearch"
	"hearth/internal/schematest"
)

// A file_search_call as hearth writes it is OpenAI's item, and comes back unchanged
// as an input item (a stateless client sends its output back).
func TestFileSearchCallItem(t *testing.T) {
	for _, in := range []string{
		`{"type":"file_search_call","id":"fs_1","status":"completed","queries":["leave policy"]}`,
		`{"type":"file_search_call","id":"fs_2","status":"completed","queries":["q"],"results":[{"file_id":"file_1","filename":"a.md","score":0.5,"text":"A.","attributes":{"team":"ops","year":2025}}]}`,
		`{"type":"file_search_call","id":"fs_3","status":"failed","queries":["q"],"results":[]}`,
		`{"type":"file_search_call","id":"fs_4","status":"searching","queries":[]}`,
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
		schematest.FileSearch.Validate(t, "ItemField", json.RawMessage(out))
	}
}

// A request's file_search tool is decoded in full and echoed as sent; tool_choice
// forces it by its type and allowed_tools names it by its type.
func TestDecodeFileSearchTool(t *testing.T) {
	body := `{"model":"m","input":"hi","tools":[{"type":"file_search","vector_store_ids":["vs_a","vs_b"],"max_num_results":3,` +
		`"filters":{"type":"eq","key":"team","value":"ops"},"ranking_options":{"ranker":"auto","score_threshold":0.25,"hybrid_search":{"embedding_weight":1,"text_weight":0}}}],` +
		`"tool_choice":{"type":"file_search"}}`
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	fs := filesearch.ToolOf(&req.Tools[0])
	if fs == nil || !reflect.DeepEqual(fs.VectorStoreIDs, []string{"vs_a", "vs_b"}) || fs.Results() != 3 ||
		string(fs.Filters) != `{"type":"eq","key":"team","value":"ops"}` || fs.Ranker != "auto" || fs.ScoreThreshold == nil || *fs.ScoreThreshold != 0.25 {
		t.Fatalf("decoded %+v", fs)
	}
	if req.ToolChoice.EffectiveMode() != hearth.ToolChoiceRequired {
		t.Errorf("tool_choice file_search is mode %q", req.ToolChoice.EffectiveMode())
	}
	echo, _ := json.Marshal(req.Tools[0])
	schematest.FileSearch.Validate(t, "ResponsesToolParam", json.RawMessage(echo))
	choice, _ := json.Marshal(req.ToolChoice)
	if string(choice) != `{"type":"file_search"}` {
		t.Errorf("tool_choice echo %s", choice)
	}

	allowed := `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_a"]}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"file_search"}]}}`
	req, _, err = hearth.DecodeCreateRequest([]byte(allowed))
	if err != nil {
		t.Fatal(err)
	}
	if filesearch.ToolOf(&req.Tools[0]).Results() != filesearch.FileSearchDefaultResults {
		t.Errorf("default max_num_results %d", filesearch.ToolOf(&req.Tools[0]).Results())
	}
	if choice, _ := json.Marshal(req.ToolChoice); string(choice) != `{"type":"allowed_tools","mode":"required","tools":[{"type":"file_search"}]}` {
		t.Errorf("allowed_tools echo %s", choice)
	}
}

// A search's events, in order, and the answer that names a result's file annotated
// with a file_citation whose index is the character just past the name.
func TestBuilderFileSearch(t *testing.T) {
	req := &hearth.CreateResponseRequest{Model: "m", Include: []string{filesearch.IncludeFileSearchResults}}
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
	found := []filesearch.FileSearchResult{
		{FileID: "file_1", Filename: "notes.md", Score: 0.75, Text: "Notes.", Attributes: map[string]any{"team": "ops"}},
		{FileID: "file_2", Filename: "handbook.md", Score: 0.5, Text: "Leave."},
	}
	steps := []func() error{
		func() error { return filesearch.StartCall(b) },
		func() error { return b.ArgumentsDelta(`{"query":"leave"}`) },
		func() error { return filesearch.Searching(b, []string{"leave"}) },
		func() error { return filesearch.EndCall(b, found, found, "results", false) },
		// Cited: handbook.md (twice) and notes.md at a sentence's end; not the
		// longer names release-notes.md and notes.md.bak.
		func() error {
			return b.TextDelta("Séé handbook.md, release-notes.md and notes.md.bak; handbook.md says so (notes.md).")
		},
		func() error { return b.Complete(hearth.Usage{}) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.file_search_call.in_progress", "response.file_search_call.searching",
		"response.file_search_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.annotation.added", "response.output_text.annotation.added", "response.output_text.annotation.added",
		"response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("events:\n  got  %q\n  want %q", types, want)
	}
	schematest.FileSearch.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Error(err)
	}
	out := b.Response().Output
	call, _ := json.Marshal(out[0])
	if w := `{"type":"file_search_call","id":"` + out[0].ID + `","status":"completed","queries":["leave"],"results":[` +
		`{"file_id":"file_1","filename":"notes.md","score":0.75,"text":"Notes.","attributes":{"team":"ops"}},` +
		`{"file_id":"file_2","filename":"handbook.md","score":0.5,"text":"Leave.","attributes":{}}]}`; string(call) != w {
		t.Errorf("item:\n  got  %s\n  want %s", call, w)
	}
	got := out[1].Content[0].Annotations
	wantA := []hearth.Annotation{
		{Type: "file_citation", FileID: "file_2", Filename: "handbook.md", Index: 15},
		{Type: "file_citation", FileID: "file_2", Filename: "handbook.md", Index: 63},
		{Type: "file_citation", FileID: "file_1", Filename: "notes.md", Index: 81},
	}
	if !reflect.DeepEqual(got, wantA) {
		t.Errorf("annotations = %+v, want %+v", got, wantA)
	}
	a, _ := json.Marshal(got[0])
	if string(a) != `{"type":"file_citation","file_id":"file_2","filename":"handbook.md","index":15}` {
		t.Errorf("annotation JSON %s", a)
	}
}
