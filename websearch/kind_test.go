package websearch

import (
	"reflect"
	"testing"

	"hearth"
)

// The tool's output read as the Config maps it: a list, or an object's field that is
// one; entries without a URL are skipped; another shape is not results.
func TestConfigParse(t *testing.T) {
	def := Config{}.withDefaults()
	custom := Config{Results: "hits", URL: "link", Title: "name", Snippet: "summary"}.withDefaults()
	for _, c := range []struct {
		name string
		cfg  Config
		out  string
		want []result
		ok   bool
	}{
		{"object", def, `{"results":[{"url":"https://a/","title":"A","snippet":"a"},{"title":"no url"}]}`, []result{{"https://a/", "A", "a"}}, true},
		{"list", def, `[{"url":"https://b/"}]`, []result{{URL: "https://b/"}}, true},
		{"empty", def, `{"results":[]}`, []result{}, true},
		{"custom fields", custom, `{"hits":[{"link":"https://c/","name":"C","summary":"c"}]}`, []result{{"https://c/", "C", "c"}}, true},
		{"wrong field", custom, `{"results":[{"url":"https://c/"}]}`, nil, false},
		{"text", def, `three pages about bread`, nil, false},
	} {
		got, ok := c.cfg.parse(c.out)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: parse = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if got := render([]result{{"https://a/", "A", "a"}, {URL: "https://b/", Title: "B"}}); got != "[1] A\nhttps://a/\na\n\n[2] B\nhttps://b/" {
		t.Errorf("render = %q", got)
	}
}

// A search reads as a call of the function and its results: this response's with what
// the model read, a stored one with its sources, or a note when nothing was kept.
func TestAsCalls(t *testing.T) {
	search := func(id, status, results string, sources []WebSearchSource) hearth.Item {
		return hearth.Item{Type: ItemWebSearchCall, ID: id, Status: status, Output: hearth.ToolOutput{Text: results},
			Hosted: &WebSearchAction{Type: "search", Query: "bread", Sources: sources}}
	}
	items := []hearth.Item{
		{Type: hearth.ItemMessage, Role: hearth.RoleUser},
		search("ws_1", hearth.StatusCompleted, "[1] Bread\nhttps://b/", nil),
		search("ws_2", hearth.StatusCompleted, "", []WebSearchSource{{URL: "https://b/"}}),
		search("ws_3", hearth.StatusCompleted, "", nil),
		search("ws_4", hearth.StatusFailed, "", nil),
		{Type: ItemWebSearchCall, ID: "ws_5", Hosted: &WebSearchAction{Type: "open_page"}},
	}
	got := asCalls("web_search", items)
	wantOut := []string{"[1] Bread\nhttps://b/", "Results (their text is not kept):\n[1] https://b/",
		"(The results of this search are not kept; search again to read them.)", "Error: the search failed."}
	if len(got) != 1+2*len(wantOut) {
		t.Fatalf("%d items: %+v", len(got), got)
	}
	for i, w := range wantOut {
		call, out := got[1+2*i], got[2+2*i]
		if call.Type != hearth.ItemFunctionCall || call.Name != "web_search" || call.Arguments != `{"query":"bread"}` || call.CallID != out.CallID {
			t.Errorf("call %d: %+v", i, call)
		}
		if out.Type != hearth.ItemFunctionCallOutput || out.Output.Text != w {
			t.Errorf("output %d: %q, want %q", i, out.Output.Text, w)
		}
	}
}
