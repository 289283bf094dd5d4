package hearth_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"hearth"
)

// probe is a made-up item of a search kind: what SearchCall does is the same for every
// kind that declares one, so it is tested here on a kind of the test's own.
type probe struct {
	Query string
	Found []string
}

func (p *probe) CloneHosted() hearth.HostedData {
	c := *p
	c.Found = append([]string(nil), p.Found...)
	return &c
}

// probeCalls are two made-up kinds' search calls; the second one's citations come
// first on a part (CiteOrder).
var probeCalls = []*hearth.SearchCall[*probe, string]{
	newProbeCall("probe", 1),
	newProbeCall("sonde", 0),
}

func newProbeCall(name string, order int) *hearth.SearchCall[*probe, string] {
	return &hearth.SearchCall[*probe, string]{
		Type: name + "_call", Prefix: name[:2],
		EventInProgress: "response." + name + "_call.in_progress", EventSearching: "response." + name + "_call.searching",
		EventCompleted: "response." + name + "_call.completed",
		New:            func() *probe { return &probe{} },
		Cite: func(text string, found []string) []hearth.Annotation {
			var out []hearth.Annotation
			for _, f := range found {
				if strings.Contains(text, f) {
					out = append(out, hearth.Annotation{Type: name, URL: f})
				}
			}
			return out
		},
		CiteOrder: order,
	}
}

func init() {
	for _, c := range probeCalls {
		hearth.RegisterKind(hearth.Kind{Name: c.Type, Order: 100,
			Items:  []hearth.ItemType{{Type: c.Type, Arguments: true}},
			Events: []hearth.EventType{{Type: c.EventInProgress}, {Type: c.EventSearching}, {Type: c.EventCompleted}},
		})
	}
}

func probeBuilder() (*hearth.Builder, *[]string) {
	var types []string
	b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, time.Unix(0, 0)),
		func(e hearth.Event) { types = append(types, e.Type) })
	return b, &types
}

// TestSearchCallLife: a search call streams added, in_progress, searching, then
// completed (or, failed, no completed event) and done; its item keeps what the kind
// set and the text the model read; the response's text is annotated with what the
// searches found, each kind's citations in its CiteOrder.
func TestSearchCallLife(t *testing.T) {
	b, types := probeBuilder()
	probe0, sonde := probeCalls[0], probeCalls[1]
	steps := []func() error{
		func() error { return probe0.Start(b) },
		func() error { return probe0.Searching(b, func(p *probe) { p.Query = "q" }) },
		func() error {
			return probe0.End(b, "read", func(p *probe) { p.Found = []string{"a.md"} }, []string{"a.md"}, false)
		},
		func() error { return sonde.Start(b) },
		func() error { return sonde.Searching(b, func(p *probe) { p.Query = "r" }) },
		func() error { return sonde.End(b, "Error: down", nil, []string{"b.md"}, true) },
		func() error { return b.TextDelta("see a.md and b.md") },
		func() error { return b.Complete(hearth.Usage{}) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.probe_call.in_progress", "response.probe_call.searching",
		"response.probe_call.completed", "response.output_item.done",
		"response.output_item.added", "response.sonde_call.in_progress", "response.sonde_call.searching",
		"response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.annotation.added", "response.output_text.annotation.added",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(*types, want) {
		t.Errorf("events:\n  got  %q\n  want %q", *types, want)
	}
	out := b.Response().Output
	if p := probe0.Of(out[0]); out[0].Status != hearth.StatusCompleted || !strings.HasPrefix(out[0].ID, "pr_") ||
		p == nil || p.Query != "q" || !reflect.DeepEqual(p.Found, []string{"a.md"}) || out[0].Output.Text != "read" {
		t.Errorf("probe_call %+v (%+v)", out[0], probe0.Of(out[0]))
	}
	if p := sonde.Of(out[1]); out[1].Status != hearth.StatusFailed || p == nil || p.Query != "r" || p.Found != nil {
		t.Errorf("failed sonde_call %+v (%+v)", out[1], sonde.Of(out[1]))
	}
	wantA := []hearth.Annotation{{Type: "sonde", URL: "b.md"}, {Type: "probe", URL: "a.md"}}
	if got := out[2].Content[0].Annotations; !reflect.DeepEqual(got, wantA) {
		t.Errorf("annotations %+v, want %+v", got, wantA)
	}
	if probe0.Of(out[2]) != nil {
		t.Error("Of gives a message's fields")
	}
}

// TestSearchCallReemit: a stored search call is reported as the live stream did, with
// its stored id and a copy of its fields: an incomplete one stops after in_progress,
// a failed one has no completed event.
func TestSearchCallReemit(t *testing.T) {
	c := probeCalls[0]
	for status, want := range map[string][]string{
		hearth.StatusCompleted:  {"response.output_item.added", "response.probe_call.in_progress", "response.probe_call.searching", "response.probe_call.completed", "response.output_item.done"},
		hearth.StatusFailed:     {"response.output_item.added", "response.probe_call.in_progress", "response.probe_call.searching", "response.output_item.done"},
		hearth.StatusIncomplete: {"response.output_item.added", "response.probe_call.in_progress", "response.output_item.done"},
	} {
		b, types := probeBuilder()
		want = append([]string{"response.created", "response.in_progress"}, want...)
		stored := hearth.Item{Type: c.Type, ID: "pr_stored", Status: status, Hosted: &probe{Query: "q", Found: []string{"a.md"}}}
		if err := c.Reemit(b, stored); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*types, want) {
			t.Errorf("%s: events %q, want %q", status, *types, want)
		}
		got := b.Response().Output[0]
		if got.ID != "pr_stored" || got.Status != status || !reflect.DeepEqual(c.Of(got), c.Of(stored)) || c.Of(got) == c.Of(stored) {
			t.Errorf("%s: replayed %+v (%+v), want the stored item's id, status and a copy of its fields", status, got, c.Of(got))
		}
	}
}

// TestSearchCallAsCalls: search calls read as a function call and its output: the
// model's arguments or the stored query, the text the model read, else that the
// search failed, else what the kind says of the stored fields; an item the kind
// shows nothing of is left out, and other items stay as they are.
func TestSearchCallAsCalls(t *testing.T) {
	c := probeCalls[0]
	msg := hearth.Item{Type: hearth.ItemMessage, Role: "user"}
	items := []hearth.Item{
		msg,
		{Type: c.Type, ID: "pr_1", Arguments: `{"query":"live"}`, Output: hearth.ToolOutput{Text: "read"}},
		{Type: c.Type, ID: "pr_2", Status: hearth.StatusFailed, Hosted: &probe{Query: "gone"}},
		{Type: c.Type, ID: "pr_3", Status: hearth.StatusCompleted, Hosted: &probe{Query: "kept", Found: []string{"a.md"}}},
		{Type: c.Type, ID: "pr_4", Hosted: &probe{Query: "hidden"}},
	}
	got := c.AsCalls("look", items, func(p *probe) (string, bool) {
		if p == nil {
			return "", true
		}
		return p.Query, p.Query != "hidden"
	}, func(p *probe) string { return "found " + strings.Join(p.Found, ", ") })
	want := []hearth.Item{msg}
	want = append(want, hearth.AsCall("pr_1", "look", `{"query":"live"}`, "read")...)
	want = append(want, hearth.AsCall("pr_2", "look", `{"query":"gone"}`, "Error: the search failed.")...)
	want = append(want, hearth.AsCall("pr_3", "look", `{"query":"kept"}`, "found a.md")...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("as calls:\n  got  %+v\n  want %+v", got, want)
	}
	if plain := []hearth.Item{msg}; !reflect.DeepEqual(c.AsCalls("look", plain, nil, nil), plain) {
		t.Error("items without search calls changed")
	}
}

// TestSearchQuery: a search function's query, and whether there is one to search for.
func TestSearchQuery(t *testing.T) {
	for args, want := range map[string]struct {
		q  string
		ok bool
	}{
		`{"query":"leave policy"}`: {"leave policy", true},
		`{"query":"  "}`:           {"  ", false},
		`{}`:                       {"", false},
		`not json`:                 {"", false},
	} {
		if q, ok := hearth.SearchQuery(args); q != want.q || ok != want.ok {
			t.Errorf("%s: %q %v, want %q %v", args, q, ok, want.q, want.ok)
		}
	}
	if got := hearth.Shown[string](false, []string{"a"}); got != nil {
		t.Errorf("not included: %v", got)
	}
	if got := hearth.Shown[string](true, nil); got == nil || len(got) != 0 {
		t.Errorf("included, none found: %#v", got)
	}
}
