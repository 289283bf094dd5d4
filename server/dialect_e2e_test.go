package server_test

import (
	"net/http"
	"strings"
	"testing"

	"hearth/internal/schematest"
	"hearth/scriptmodel"
)

// TestEventDialectE2E: OpenAI's clients get OpenAI's names for raw reasoning events,
// everyone else the spec's; a header chooses explicitly.
func TestEventDialectE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	body := reqBody(scriptmodel.ReasoningModel, true, `"input":"hello"`)
	for _, tc := range []struct {
		header, value string
		want, not     string
	}{
		{"", "", "response.reasoning.delta", "response.reasoning_text.delta"},
		{"X-Stainless-Lang", "js", "response.reasoning_text.delta", "response.reasoning.delta"},
		{"Originator", "codex_cli_rs", "response.reasoning_text.done", "response.reasoning.done"},
		{"x-hearth-event-names", "openai", "response.reasoning_text.delta", "response.reasoning.delta"},
		{"x-hearth-event-names", "openresponses", "response.reasoning.delta", "response.reasoning_text.delta"},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		events, err := schematest.ReadSSE(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s=%s: %v", tc.header, tc.value, err)
		}
		types := map[string]bool{}
		for _, e := range events {
			types[e["type"].(string)] = true
		}
		if !types[tc.want] || types[tc.not] {
			t.Errorf("%s=%q: event types %v; want %s and no %s", tc.header, tc.value, types, tc.want, tc.not)
		}
	}
}
