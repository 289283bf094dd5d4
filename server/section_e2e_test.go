package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestEnforcedSectionE2E: once hearth generated a call under a grammar, what follows
// is another allowed call or the end of the turn. The repeat script model reopens a
// call after every closer hearth writes (the second call, for ever); each enforcement
// path gives its calls once, then the repeat ends the turn, complete, in JSON and SSE.
func TestEnforcedSectionE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.RepeatModel)
	pieces := m.Pieces(scriptmodel.EntryAssistant)
	throughReasoning := piecesThrough(t, pieces, "</think>")
	throughOpener := piecesThrough(t, pieces, "<tool_call>")
	// The script's calls pass the grammar token for token; the runtime then ends each
	// constrained call with EOS.
	weather := piecesThrough(t, pieces, `"Paris"}}`) - throughOpener
	secondOpener := piecesThrough(t, pieces, "\n<tool_call>")
	timeCall := piecesThrough(t, pieces, `"Europe/Paris"}}`) - secondOpener
	// After each closer: the script's "\n<tool_call>" (one token), then the second
	// call under the grammar. Its repeat is taken back as soon as its JSON closes,
	// before the runtime's EOS.
	tail := 1 + timeCall + 1 + 1 + timeCall

	reasoning := item{Type: "reasoning", Status: "completed", Text: "I need the weather and the local time."}
	weatherItem := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}
	timeItem := item{Type: "function_call", Status: "completed", Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`}
	strict := strings.ReplaceAll(toolsJSON, `"parameters"`, `"strict":true,"parameters"`)
	// A third tool makes allowed_tools a strict subset, so the calls are constrained.
	withNews := strings.TrimSuffix(toolsJSON, "]") +
		`,{"type":"function","name":"get_news","parameters":{"type":"object","properties":{"topic":{"type":"string"}}}}]`
	common := `"input":"weather and time in Paris?","temperature":0,`

	cases := []struct {
		name   string
		extra  string
		want   []item
		output int
	}{
		{"strict tools", strict, []item{reasoning, weatherItem, timeItem},
			throughOpener + weather + 1 + tail},
		// The engine writes the opener when reasoning ends.
		{"required", toolsJSON + `,"tool_choice":"required"`, []item{reasoning, weatherItem, timeItem},
			throughReasoning + weather + 1 + tail},
		// The script's first call is get_weather: under the get_time grammar its
		// first token ({"name":) passes, the rest is the grammar's, one byte each.
		{"named function", toolsJSON + `,"tool_choice":{"type":"function","name":"get_time"}`,
			[]item{reasoning, {Type: "function_call", Status: "completed", Name: "get_time", Arguments: `{"timezone":""}`}, timeItem},
			throughReasoning + 1 + len(`"get_time","arguments":{"timezone":""}}`) + 1 + tail},
		{"allowed_tools", withNews + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_weather"},{"type":"function","name":"get_time"}]}`,
			[]item{reasoning, weatherItem, timeItem},
			throughOpener + weather + 1 + tail},
		// The cap of one call ends the output as soon as the call's JSON closes,
		// before the runtime's EOS: no continuation.
		{"strict tools, parallel_tool_calls false", strict + `,"parallel_tool_calls":false`,
			[]item{reasoning, weatherItem},
			throughOpener + weather},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			label := tc.name + map[bool]string{false: " (json)", true: " (sse)"}[stream]
			body := reqBody(scriptmodel.RepeatModel, stream, common+tc.extra)
			var r *hearth.Response
			if stream {
				events, resp := createSSE(t, srv, body)
				checkDeltasMatch(t, label, events, resp)
				if typ := events[len(events)-1]["type"]; typ != "response.completed" {
					t.Errorf("%s: stream ends with %v", label, typ)
				}
				r = resp
			} else {
				r = createJSON(t, srv, body)
			}
			if r.Status != hearth.StatusCompleted || r.Usage == nil {
				t.Fatalf("%s: status %s, incomplete %+v, error %+v", label, r.Status, r.IncompleteDetails, r.Error)
			}
			sameItems(t, label, r.Output, tc.want)
			if r.Usage.OutputTokens != tc.output {
				t.Errorf("%s: output_tokens %d, want %d", label, r.Usage.OutputTokens, tc.output)
			}
		}
	}

	// Left to itself (nothing enforced) the model makes the same two calls and ends.
	r := createJSON(t, srv, reqBody(scriptmodel.RepeatModel, false, common+toolsJSON))
	sameItems(t, "unenforced", r.Output, []item{reasoning, weatherItem, timeItem})
	if r.Status != hearth.StatusCompleted || r.Usage.OutputTokens != m.EvalCount(scriptmodel.EntryAssistant) {
		t.Errorf("unenforced: status %s, usage %+v, want output_tokens %d", r.Status, r.Usage, m.EvalCount(scriptmodel.EntryAssistant))
	}
}

// TestEnforcedSectionDeterministicE2E: the same enforced request gives the same items
// and token counts every time, however far the runtime ran past each decision point
// before hearth left its stream.
func TestEnforcedSectionDeterministicE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	testenv.Model(t, scriptmodel.RepeatModel)
	withNews := strings.TrimSuffix(toolsJSON, "]") +
		`,{"type":"function","name":"get_news","parameters":{"type":"object","properties":{"topic":{"type":"string"}}}}]`
	body := reqBody(scriptmodel.RepeatModel, false, `"input":"weather and time in Paris?","temperature":0,`+withNews+
		`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_weather"},{"type":"function","name":"get_time"}]}`)
	type outcome struct {
		Status        string
		Items         []item
		Input, Output int
	}
	var first string
	const runs = 10
	for i := range runs {
		r := createJSON(t, srv, body)
		o := outcome{Status: r.Status, Items: summarize(r.Output), Input: r.Usage.InputTokens, Output: r.Usage.OutputTokens}
		b, _ := json.Marshal(o)
		if i == 0 {
			first = string(b)
			if len(o.Items) != 3 {
				t.Fatalf("run 1: %s", b)
			}
			continue
		}
		if string(b) != first {
			t.Fatalf("run %d differs from run 1:\n got %s\nwant %s", i+1, b, first)
		}
	}
}
