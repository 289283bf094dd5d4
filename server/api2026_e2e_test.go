package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestAdditionalToolsE2E: tools declared by an additional_tools input item (Codex's
// lighter request shape, with no top-level tools) are the model's tools: its call
// comes back as a function call of one of them.
func TestAdditionalToolsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := strings.TrimPrefix(toolsJSON, `"tools":`)
	r := createJSON(t, srv, `{"model":"`+scriptmodel.ToolsModel+`","reasoning":{"context":"all_turns"},"input":[
		{"type":"additional_tools","role":"developer","tools":`+tools+`},
		{"role":"user","content":"weather and time in Paris?"}]}`)
	var calls []string
	for _, it := range r.Output {
		if it.Type == hearth.ItemFunctionCall {
			calls = append(calls, it.Name+" "+it.Arguments)
		}
	}
	want := []string{`get_weather {"city":"Paris"}`, `get_time {"timezone":"Europe/Paris"}`}
	if strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Errorf("calls %q, want %q", calls, want)
	}
	if len(r.Tools) != 2 {
		t.Errorf("response tools %+v, want the two declared", r.Tools)
	}
}

// TestPromptCacheTTLE2E: prompt_cache_options.ttl (else prompt_cache_retention "24h")
// is how long the runtime keeps the model (and its KV cache) after the response. A
// request that asks nothing sends no keep-alive, and Ollama keeps a loaded model's
// last one: the life asked last stays until another request asks another.
func TestPromptCacheTTLE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	rt := testenv.Runtime(t)
	expiry := func() time.Duration {
		t.Helper()
		loaded, err := rt.Loaded(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range loaded {
			if m.Name == scriptmodel.SmallContextModel {
				return time.Until(m.ExpiresAt)
			}
		}
		t.Fatalf("%s is not loaded: %+v", scriptmodel.SmallContextModel, loaded)
		return 0
	}
	createJSON(t, srv, `{"model":"`+scriptmodel.SmallContextModel+`","prompt_cache_options":{"ttl":"2h"},"input":"hi"}`)
	if d := expiry(); d < 2*time.Hour-time.Minute || d > 2*time.Hour {
		t.Errorf("after ttl 2h the model expires in %v", d)
	}
	createJSON(t, srv, `{"model":"`+scriptmodel.SmallContextModel+`","prompt_cache_retention":"24h","input":"hi"}`)
	if d := expiry(); d < 24*time.Hour-time.Minute || d > 24*time.Hour {
		t.Errorf("after retention 24h the model expires in %v", d)
	}
	createJSON(t, srv, `{"model":"`+scriptmodel.SmallContextModel+`","input":"hi"}`)
	if d := expiry(); d < 24*time.Hour-time.Minute || d > 24*time.Hour {
		t.Errorf("without a ttl the model expires in %v, want the last one asked (24h) again", d)
	}
}

// TestPhaseE2E: the message that ends a response is its final answer, in the JSON
// reply, the stream's output_item.done and the stored response; an input message's
// phase is accepted and kept.
func TestPhaseE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	input := `[{"role":"user","content":"hi"},{"role":"assistant","phase":"commentary","content":"Looking."},{"role":"user","content":"and?"}]`
	r := createJSON(t, srv, `{"model":"`+scriptmodel.PlainModel+`","input":`+input+`}`)
	if len(r.Output) != 1 || r.Output[0].Phase != hearth.PhaseFinalAnswer {
		t.Fatalf("output %+v, want one final_answer message", r.Output)
	}
	events, final := createSSE(t, srv, `{"model":"`+scriptmodel.PlainModel+`","stream":true,"input":"hi"}`)
	for _, e := range events {
		if e["type"] == "response.output_item.done" {
			if item, _ := e["item"].(map[string]any); item["phase"] != hearth.PhaseFinalAnswer {
				t.Errorf("output_item.done %v, want phase final_answer", item)
			}
		}
	}
	resp, b := get(t, srv.URL+"/v1/responses/"+final.ID)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"phase":"final_answer"`) {
		t.Errorf("stored response %d %s, want its message's phase", resp.StatusCode, b)
	}
	resp, b = get(t, srv.URL+"/v1/responses/"+r.ID+"/input_items")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"phase":"commentary"`) {
		t.Errorf("input items %d %s, want the input message's phase kept", resp.StatusCode, b)
	}
}
