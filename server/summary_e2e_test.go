package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/server"
)

// summaryOutput is the comparable shape of a reasoning-then-text response: each
// reasoning item's raw text and summary parts, and the message text.
type summaryOutput struct {
	Reasoning, Message string
	Summary            []hearth.ContentPart
}

func summaryShape(t *testing.T, r *hearth.Response) summaryOutput {
	t.Helper()
	if r.Status != hearth.StatusCompleted || len(r.Output) != 2 || r.Output[0].Type != hearth.ItemReasoning || r.Output[1].Type != hearth.ItemMessage {
		t.Fatalf("%s: %s %v", r.ID, r.Status, summarize(r.Output))
	}
	return summaryOutput{Reasoning: r.Output[0].Text(hearth.PartReasoningText), Message: r.Output[1].Text(hearth.PartOutputText), Summary: r.Output[0].Summary}
}

// streamDialect posts a streaming request with x-hearth-event-names set to dialect and
// returns its events with OpenAI's raw reasoning names mapped to the spec's, after
// checking that the raw reasoning events carry the dialect's names. The payloads of
// both dialects are the same but for those names, so the mapped events are validated
// against the schema and the lifecycle rules.
func streamDialect(t *testing.T, url, dialect, body string) ([]map[string]any, *hearth.Response) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.EventNamesHeader, dialect)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	events, err := schematest.ReadSSE(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return specNames(t, dialect, events)
}

func specNames(t *testing.T, dialect string, events []map[string]any) ([]map[string]any, *hearth.Response) {
	t.Helper()
	raw, other := "response.reasoning.", "response.reasoning_text."
	if dialect == "openai" {
		raw, other = other, raw
	}
	for _, e := range events {
		typ := e["type"].(string)
		if strings.HasPrefix(typ, other) {
			t.Fatalf("%s dialect: event %s", dialect, typ)
		}
		if rest, ok := strings.CutPrefix(typ, raw); ok {
			e["type"] = "response.reasoning." + rest
		}
	}
	schematest.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatalf("%s dialect: lifecycle: %v", dialect, err)
	}
	b, _ := json.Marshal(events[len(events)-1]["response"])
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return events, &r
}

// reasoningEvents lists the types of the events of the reasoning item (output 0),
// each run of deltas listed by the first occurrence of each delta type in it (the
// number of deltas depends on how the runtime chunks its output).
func reasoningEvents(events []map[string]any) []string {
	var out []string
	inRun := map[string]bool{}
	for _, e := range events {
		typ := e["type"].(string)
		if idx, ok := e["output_index"].(float64); !ok || idx != 0 {
			continue
		}
		if !strings.HasSuffix(typ, ".delta") {
			clear(inRun)
		} else if inRun[typ] {
			continue
		}
		inRun[typ] = true
		out = append(out, typ)
	}
	return out
}

// TestReasoningSummaryE2E: with reasoning.summary each reasoning item also carries its
// text as a summary_text part, in JSON and streamed (both dialects) with the summary
// events around the raw reasoning ones; stored, retrieved and replayed the same.
// Without the field nothing changes.
func TestReasoningSummaryE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	think := testenv.Model(t, scriptmodel.ReasoningModel)
	a := scriptmodel.EntryAssistant
	reasoning, text := splitThink(t, think.Text(a))
	want := summaryOutput{Reasoning: reasoning, Message: text,
		Summary: []hearth.ContentPart{{Type: hearth.PartSummaryText, Text: reasoning}}}
	plain := summaryOutput{Reasoning: reasoning, Message: text, Summary: []hearth.ContentPart{}}
	url := srv.URL + "/v1/responses"

	for _, mode := range []string{"auto", "concise", "detailed"} {
		r := createJSON(t, srv, reqBody(scriptmodel.ReasoningModel, false, `"input":"hello","reasoning":{"summary":"`+mode+`"}`))
		if got := summaryShape(t, r); !reflect.DeepEqual(got, want) {
			t.Errorf("json, summary %s: %+v, want %+v", mode, got, want)
		}
		if r.Reasoning == nil || r.Reasoning.Summary != mode || r.Usage.OutputTokens != think.EvalCount(a) {
			t.Errorf("json, summary %s: reasoning %+v usage %+v", mode, r.Reasoning, r.Usage)
		}
	}
	if r := createJSON(t, srv, reqBody(scriptmodel.ReasoningModel, false, `"input":"hello"`)); !reflect.DeepEqual(summaryShape(t, r), plain) {
		t.Errorf("json without reasoning.summary: %+v, want an empty summary", summaryShape(t, r))
	}

	wantEvents := []string{"response.output_item.added",
		"response.reasoning_summary_part.added", "response.content_part.added",
		"response.reasoning.delta", "response.reasoning_summary_text.delta",
		"response.reasoning.done", "response.content_part.done",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
		"response.output_item.done"}
	plainEvents := []string{"response.output_item.added", "response.content_part.added",
		"response.reasoning.delta", "response.reasoning.done", "response.content_part.done", "response.output_item.done"}
	for _, dialect := range []string{"openresponses", "openai"} {
		events, r := streamDialect(t, url, dialect, reqBody(scriptmodel.ReasoningModel, true, `"input":"hello","reasoning":{"summary":"auto"}`))
		if got := summaryShape(t, r); !reflect.DeepEqual(got, want) {
			t.Errorf("%s sse: %+v, want %+v", dialect, got, want)
		}
		if got := reasoningEvents(events); !reflect.DeepEqual(got, wantEvents) {
			t.Errorf("%s sse: reasoning events\n %v\nwant\n %v", dialect, got, wantEvents)
		}
		// The summary streams with the reasoning, delta for delta.
		var raw, sum []string
		var rawOnly []map[string]any
		for _, e := range events {
			switch e["type"] {
			case "response.reasoning.delta":
				raw = append(raw, e["delta"].(string))
			case "response.reasoning_summary_text.delta":
				sum = append(sum, e["delta"].(string))
				continue
			}
			rawOnly = append(rawOnly, e)
		}
		checkDeltasMatch(t, dialect+" sse", rawOnly, r)
		if len(raw) < 2 || !reflect.DeepEqual(raw, sum) {
			t.Errorf("%s sse: reasoning deltas %q, summary deltas %q", dialect, raw, sum)
		}

		events, r = streamDialect(t, url, dialect, reqBody(scriptmodel.ReasoningModel, true, `"input":"hello"`))
		if got := reasoningEvents(events); !reflect.DeepEqual(got, plainEvents) || !reflect.DeepEqual(summaryShape(t, r), plain) {
			t.Errorf("%s sse without reasoning.summary: %v %+v", dialect, got, summaryShape(t, r))
		}

		// Stored, retrieved and replayed as it was returned.
		_, r = streamDialect(t, url, dialect, reqBody(scriptmodel.ReasoningModel, true, `"input":"hello","reasoning":{"summary":"detailed"}`))
		resp, b := getURL(t, url+"/"+r.ID)
		var got hearth.Response
		if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("get: %d %s", resp.StatusCode, b)
		}
		if fmt.Sprint(summaryShape(t, &got)) != fmt.Sprint(want) || !reflect.DeepEqual(got.Output, r.Output) {
			t.Errorf("%s: retrieved output %+v, streamed %+v", dialect, got.Output, r.Output)
		}
		req, _ := http.NewRequest("GET", url+"/"+r.ID+"?stream=true", nil)
		req.Header.Set(server.EventNamesHeader, dialect)
		rr, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		replayed, err := schematest.ReadSSE(rr.Body)
		rr.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		replayed, final := specNames(t, dialect, replayed)
		if got := reasoningEvents(replayed); !reflect.DeepEqual(got, wantEvents) {
			t.Errorf("%s replay: reasoning events\n %v\nwant\n %v", dialect, got, wantEvents)
		}
		if !reflect.DeepEqual(final.Output, r.Output) {
			t.Errorf("%s replay: output %+v, want %+v", dialect, final.Output, r.Output)
		}
	}
}
