package engine_test

import (
	"context"
	"testing"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// BenchmarkEnforcedCall measures what enforcing tool_choice costs: the same reasoning
// and the same get_time call, once as the model writes it (tool_choice auto: the
// single-request fast path) and once enforced (allowed_tools: only get_time, so the
// engine stops at the opener and continues under the grammar), on the bench variant of
// the tools script model, which decodes at a small real model's pace.
//
// Reported: ms per response of each, their ratio, and the output tokens of each. The
// script model spells constrained JSON one byte token at a time (it has no tokens for
// the forced text), so the enforced call takes more tokens than the free one; a real
// model writes about as many either way, and ms/token then shows the cost of the stop
// and the continuation itself.
//
//	CGO_CPPFLAGS=... go test ./engine -run '^$' -bench EnforcedCall -benchtime 3x
func BenchmarkEnforcedCall(b *testing.B) {
	rt := testenv.Runtime(b)
	_, model := testenv.BenchModel(b, scriptmodel.ToolsModel)
	e := engine.New(rt.Seam(), engine.DefaultFormats(), nil)
	const tools = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
		`{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}]`
	free := `{"model":"` + model + `","input":"weather and time in Paris?","temperature":0,` + tools + `}`
	enforced := `{"model":"` + model + `","input":"weather and time in Paris?","temperature":0,` + tools +
		`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`
	run := func(body string) (time.Duration, int) {
		req, _, err := hearth.DecodeCreateRequest([]byte(body))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		j, err := e.Prepare(context.Background(), req, nil, engine.Inputs{})
		if err != nil {
			b.Fatal(err)
		}
		bld := hearth.NewBuilder(hearth.NewResponse("resp_bench", req, start), nil)
		if err := j.Run(context.Background(), bld); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		r := bld.Response()
		calledTime := false
		for _, it := range r.Output {
			calledTime = calledTime || (it.Type == hearth.ItemFunctionCall && it.Name == "get_time")
		}
		if r.Status != hearth.StatusCompleted || !calledTime {
			b.Fatalf("status %s, output %+v", r.Status, r.Output)
		}
		return elapsed, r.Usage.OutputTokens
	}
	// Load the model and fill the KV cache with the shared prompt.
	run(free)
	run(enforced)
	b.ResetTimer()
	var tFree, tEnforced time.Duration
	var nFree, nEnforced int
	for i := 0; i < b.N; i++ {
		d, n := run(free)
		tFree, nFree = tFree+d, n
		d, n = run(enforced)
		tEnforced, nEnforced = tEnforced+d, n
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(ms(tFree), "ms/free")
	b.ReportMetric(ms(tEnforced), "ms/enforced")
	b.ReportMetric(float64(tEnforced)/float64(tFree), "enforced/free")
	b.ReportMetric(float64(nFree), "tokens/free")
	b.ReportMetric(float64(nEnforced), "tokens/enforced")
	b.ReportMetric(ms(tFree)/float64(nFree), "ms/token-free")
	b.ReportMetric(ms(tEnforced)/float64(nEnforced), "ms/token-enforced")
}
