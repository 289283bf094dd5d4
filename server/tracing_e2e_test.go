package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/tracing"
	"hearth/internal/tracing/jaegertest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
	"hearth/toolsearch"
)

// TestTracingJaegerE2E serves hearth with tracing on, exporting over OTLP/HTTP to a
// real Jaeger v2, and makes three responses on the embedded runtime inside one trace
// of the client's (a W3C traceparent header): a plain answer (one generation), a
// continuation of it whose allowed_tools makes the engine generate in constrained
// phases, and a response whose model calls the hosted tool_search. It reads the trace back from Jaeger's query API and checks the spans'
// names, their parents (hearth's under the client's span, the core's under the
// request's, the engine's under the response's) and their token counts against the
// usage each response reports.
func TestTracingJaegerE2E(t *testing.T) {
	j := jaegertest.Start(t)
	ctx := context.Background()
	tp, err := tracing.New(ctx, tracing.Config{Endpoint: j.OTLP, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if tp == nil {
		t.Fatal("tracing.New with an endpoint returned no provider")
	}
	t.Cleanup(func() { tp.Shutdown(ctx) })
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// tool_search is a hosted tool hearth runs in process: its call is a tool span.
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.RegisterHosted(toolsearch.NewKind(nil))
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Engine: eng, Database: db, Tracing: tp}))
	testenv.Model(t, scriptmodel.PlainModel)
	testenv.Model(t, scriptmodel.ToolsModel)
	testenv.Model(t, scriptmodel.ToolSearchModel)

	traceID, clientSpan1, clientSpan2, clientSpan3 := randomHex(16), randomHex(8), randomHex(8), randomHex(8)
	plain := createTraced(t, srv, traceID, clientSpan1, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	constrained := createTraced(t, srv, traceID, clientSpan2, reqBody(scriptmodel.ToolsModel, false,
		`"previous_response_id":"`+plain.ID+`","input":"weather and time in Paris?","temperature":0,`+toolsJSON+
			`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}`))
	if n := len(constrained.Output); n == 0 || constrained.Output[n-1].Name != "get_time" {
		t.Fatalf("the constrained response did not end with the allowed call: %+v", constrained.Output)
	}
	searched := createTraced(t, srv, traceID, clientSpan3, reqBody(scriptmodel.ToolSearchModel, false, tsAsk+","+tsTools(`{"type":"tool_search"}`)))
	if len(searched.Output) == 0 || searched.Output[0].Type != "tool_search_call" {
		t.Fatalf("the tool_search response made no search: %+v", searched.Output)
	}
	// Every request has ended once the server is closed; the flush then sends every
	// span, and Jaeger (its queue off) has stored them when the export returns.
	srv.Close()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	spans, services, err := j.Trace(ctx, traceID)
	if err != nil {
		t.Fatalf("%v\njaeger log:\n%s", err, j.Log())
	}
	for _, s := range spans {
		if services[s.ProcessID] != "hearth" {
			t.Errorf("span %s: service %q, want hearth", s.OperationName, services[s.ProcessID])
		}
	}
	t.Logf("%d spans:\n%s", len(spans), outline(spans))

	for _, tc := range []struct {
		name        string
		clientSpan  string
		resp        *hearth.Response
		constrained bool
		hosted      bool
	}{
		{"plain", clientSpan1, plain, false, false},
		{"constrained", clientSpan2, constrained, true, false},
		{"hosted tool", clientSpan3, searched, false, true},
	} {
		// The request's server span is the child of the client's span.
		req := only(t, tc.name, spans, func(s jaegertest.Span) bool {
			return s.OperationName == "POST /v1/responses" && s.Parent() == tc.clientSpan
		})
		checkTag(t, req, "http.response.status_code", float64(200))
		checkTag(t, req, "http.route", "/v1/responses")
		// The response's GenAI span, under the request's.
		chat := only(t, tc.name, spans, func(s jaegertest.Span) bool {
			return s.OperationName == "chat "+tc.resp.Model && s.Parent() == req.SpanID
		})
		checkTag(t, chat, tracing.GenAIOperation, "chat")
		checkTag(t, chat, tracing.GenAIRequestModel, tc.resp.Model)
		checkTag(t, chat, tracing.GenAIResponseID, tc.resp.ID)
		checkTag(t, chat, tracing.GenAIInputTokens, float64(tc.resp.Usage.InputTokens))
		checkTag(t, chat, tracing.GenAIOutputTokens, float64(tc.resp.Usage.OutputTokens))
		checkTag(t, chat, tracing.GenAICachedTokens, float64(tc.resp.Usage.InputTokensDetails.CachedTokens))
		if _, ok := chat.Tag(tracing.GenAITimeToFirstToken); !ok {
			t.Errorf("%s: the response's span has no %s", tc.name, tracing.GenAITimeToFirstToken)
		}
		children := func(parent string) []jaegertest.Span {
			var out []jaegertest.Span
			for _, s := range spans {
				if s.Parent() == parent {
					out = append(out, s)
				}
			}
			return out
		}
		under := children(chat.SpanID)
		for _, name := range []string{"hearth.queue.wait", "hearth.store.write store_response"} {
			only(t, tc.name+" "+name, under, func(s jaegertest.Span) bool { return s.OperationName == name })
		}
		if !slices.ContainsFunc(under, func(s jaegertest.Span) bool { return s.OperationName == "hearth.prompt.render" }) {
			t.Errorf("%s: no prompt render span", tc.name)
		}
		if tc.hosted {
			// The search ran between the model's turns: a tool span under the
			// response's, with the call's id; each turn generated.
			call := tc.resp.Output[0]
			tool := only(t, tc.name, under, func(s jaegertest.Span) bool { return strings.HasPrefix(s.OperationName, "execute_tool ") })
			checkTag(t, tool, tracing.GenAIOperation, "execute_tool")
			checkTag(t, tool, tracing.GenAIToolCallID, call.ID)
			checkTag(t, tool, "hearth.item.type", call.Type)
			checkTag(t, tool, "hearth.item.status", "completed")
			// Two turns: the search, then the call it found, rendered and generated
			// after the search ended.
			after := map[string]bool{}
			for _, s := range under {
				if s.StartTime >= tool.StartTime+tool.Duration {
					after[strings.Fields(s.OperationName)[0]] = true
				}
			}
			if !after["hearth.prompt.render"] || !after["hearth.phase"] {
				t.Errorf("%s: no second turn (render, generation) after the tool span: %v", tc.name, after)
			}
			continue
		}
		if !tc.constrained {
			// One generation: its prefill counts the prompt, its decode the output.
			pre := only(t, tc.name, under, func(s jaegertest.Span) bool { return s.OperationName == "hearth.prefill" })
			dec := only(t, tc.name, under, func(s jaegertest.Span) bool { return s.OperationName == "hearth.decode" })
			checkTag(t, pre, tracing.GenAIInputTokens, float64(tc.resp.Usage.InputTokens))
			checkTag(t, dec, tracing.GenAIOutputTokens, float64(tc.resp.Usage.OutputTokens))
			if dec.StartTime < pre.StartTime+pre.Duration {
				t.Errorf("decode starts before the prefill ends: %+v %+v", pre, dec)
			}
			continue
		}
		// The continuation read its chain (kept in memory since the first response).
		load := only(t, tc.name, under, func(s jaegertest.Span) bool { return s.OperationName == "hearth.chain.load" })
		checkTag(t, load, "hearth.chain.source", "memory")
		// Phases: each generated under the response's span, with its prefill and decode
		// under it; their tokens add up to the response's output tokens, and the call
		// was generated under a grammar.
		var phases []jaegertest.Span
		for _, s := range under {
			if strings.HasPrefix(s.OperationName, "hearth.phase ") {
				phases = append(phases, s)
			}
		}
		if len(phases) < 2 {
			t.Fatalf("%s: %d phase spans, want a free phase and a constrained one", tc.name, len(phases))
		}
		sum, grammar := 0.0, false
		for _, ph := range phases {
			n, _ := ph.Tag(tracing.GenAIOutputTokens)
			sum += n.(float64)
			if c, _ := ph.Tag("hearth.constrained"); c == true {
				grammar = true
			}
			if !slices.ContainsFunc(children(ph.SpanID), func(s jaegertest.Span) bool { return s.OperationName == "hearth.prefill" }) {
				t.Errorf("%s: phase %s has no prefill span", tc.name, ph.OperationName)
			}
		}
		if int(sum) != tc.resp.Usage.OutputTokens {
			t.Errorf("%s: the phases generated %v tokens, the response reports %d", tc.name, sum, tc.resp.Usage.OutputTokens)
		}
		if !grammar {
			t.Errorf("%s: no phase was constrained", tc.name)
		}
	}
}

// createTraced posts a JSON request with a traceparent naming the client's trace and
// span, and returns the response.
func createTraced(t *testing.T, srv *httptest.Server, traceID, spanID, body string) *hearth.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+spanID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != hearth.StatusCompleted || r.Usage == nil {
		t.Fatalf("status %s, usage %v, error %+v", r.Status, r.Usage, r.Error)
	}
	return &r
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// only is the one span of spans that match; the test fails otherwise.
func only(t *testing.T, what string, spans []jaegertest.Span, match func(jaegertest.Span) bool) jaegertest.Span {
	t.Helper()
	var found []jaegertest.Span
	for _, s := range spans {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d matching spans, want 1", what, len(found))
	}
	return found[0]
}

func checkTag(t *testing.T, s jaegertest.Span, key string, want any) {
	t.Helper()
	got, ok := s.Tag(key)
	if !ok || got != want {
		t.Errorf("span %s: %s = %v (%T), want %v", s.OperationName, key, got, got, want)
	}
}

// outline lists the spans, each under its parent, for the log.
func outline(spans []jaegertest.Span) string {
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range spans {
			if s.Parent() == parent {
				b.WriteString(strings.Repeat("  ", depth) + s.OperationName + "\n")
				walk(s.SpanID, depth+1)
			}
		}
	}
	roots := map[string]bool{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	for _, s := range spans {
		if !ids[s.Parent()] && !roots[s.Parent()] {
			roots[s.Parent()] = true
			walk(s.Parent(), 0)
		}
	}
	return b.String()
}
