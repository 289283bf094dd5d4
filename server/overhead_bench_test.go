package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/internal/codexbody"
	"hearth/internal/seal"
)

// BenchmarkResponseOverhead measures what hearth itself adds to a response: the whole
// HTTP path of POST /v1/responses (decode, chain lookup, model lookup, prompt rendering,
// parsing the generated text, storing the response and its items with fsync, JSON or
// SSE) over a runtime that answers at once with four pieces (fakeRuntime). The
// end-to-end bench (make bench) compares hearth with the runtime on a real model, where
// this cost is lost in run-to-run noise; here it is alone. Divide ms/op by the floor's
// time to first token in the bench's report for hearth's share of it.
//
// Besides ms/op (the whole round trip, the client's work included, both on the same
// machine), hearth-ms/op is the time hearth's handler took (handlerClock).
//
//	go test ./server -run '^$' -bench ResponseOverhead -benchtime 200x
func BenchmarkResponseOverhead(b *testing.B) {
	benchmarkResponseOverhead(b, newFakeRuntimeServer)
}

// benchmarkResponseOverhead runs BenchmarkResponseOverhead on the handler newServer
// returns (over fakeRuntime, with the store it chooses). Each probe starts with a
// sub-benchmark's measured loop and reports its own metrics when it ends.
func benchmarkResponseOverhead(b *testing.B, newServer func(testing.TB) http.Handler, probes ...func(*testing.B) func()) {
	// Room for the long chains (the default window is 16k; the -1m fake's is 1M).
	b.Setenv("HEARTH_CONTEXT_LENGTH", "1048576")
	clock := &handlerClock{h: newServer(b)}
	srv := httptest.NewServer(clock)
	defer srv.Close()
	const model = `"model":"hearth-fake-128k","input":"What route would you suggest through the south of France?"`
	post := func(b *testing.B, body string) map[string]any {
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s", resp.Status, raw)
		}
		if bytes.HasPrefix(raw, []byte("event:")) {
			if !bytes.HasSuffix(raw, []byte("data: [DONE]\n\n")) || !bytes.Contains(raw, []byte("response.completed")) {
				b.Fatalf("stream did not complete: %s", raw)
			}
			return nil
		}
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil || r["status"] != "completed" {
			b.Fatalf("response %s: %v", raw, err)
		}
		return r
	}
	b.Run("json", func(b *testing.B) {
		defer clock.start(b)()
		defer probe(b, probes)()
		for b.Loop() {
			post(b, `{`+model+`}`)
		}
	})
	b.Run("stream", func(b *testing.B) {
		defer clock.start(b)()
		defer probe(b, probes)()
		for b.Loop() {
			post(b, `{`+model+`,"stream":true}`)
		}
	})
	// The same turn over Chat Completions (a door over the same core), side by side
	// with /v1/responses storing nothing, as a chat completion stores nothing.
	chat := func(b *testing.B, body string) {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"finish_reason":"stop"`)) {
			b.Fatalf("%s: %s", resp.Status, raw)
		}
	}
	const chatModel = `"model":"hearth-fake-128k","messages":[{"role":"user","content":"What route would you suggest through the south of France?"}]`
	b.Run("json-nostore", func(b *testing.B) {
		defer clock.start(b)()
		defer probe(b, probes)()
		for b.Loop() {
			post(b, `{`+model+`,"store":false}`)
		}
	})
	b.Run("chat-json", func(b *testing.B) {
		defer clock.start(b)()
		defer probe(b, probes)()
		for b.Loop() {
			chat(b, `{`+chatModel+`}`)
		}
	})
	b.Run("stream-nostore", func(b *testing.B) {
		defer clock.start(b)()
		defer probe(b, probes)()
		for b.Loop() {
			post(b, `{`+model+`,"stream":true,"store":false}`)
		}
	})
	b.Run("chat-stream", func(b *testing.B) {
		defer clock.start(b)()
		defer probe(b, probes)()
		for b.Loop() {
			chat(b, `{`+chatModel+`,"stream":true}`)
		}
	})
	// A turn that continues a chain: the chain is kept from the previous turn
	// (server/hotchains.go) or loaded, and its prompt spliced onto the previous
	// turn's (engine/ollama/incremental.go). turnN continues the same response every
	// time (turn N retried over and over: siblings, none of which goes on from another);
	// chainN goes on from turn N, each op continuing the previous op's response (turns
	// N to N+ops). The 1,000-turn chains need the 1M-token fake (the fake counts a
	// prompt's bytes).
	for _, c := range []struct {
		turns  int
		linear bool
	}{{20, false}, {200, false}, {1000, false}, {1000, true}} {
		name := fmt.Sprintf("turn%d", c.turns)
		if c.linear {
			name = fmt.Sprintf("chain%d", c.turns)
		}
		b.Run(name, func(b *testing.B) {
			m := model
			if c.turns > 200 {
				m = strings.Replace(model, "-128k", "-1m", 1)
			}
			id := ""
			for turn := 1; turn < c.turns; turn++ {
				prev := ""
				if id != "" {
					prev = `,"previous_response_id":"` + id + `"`
				}
				id = post(b, `{`+m+prev+`}`)["id"].(string)
			}
			defer clock.start(b)()
			defer probe(b, probes)()
			for b.Loop() {
				r := post(b, `{`+m+`,"previous_response_id":"`+id+`"}`)
				if c.linear {
					id = r["id"].(string)
				}
			}
		})
	}
	// The Anthropic Messages door: the same question as json and stream, through the
	// door's decoding into the core and its encoding of the answer.
	messages := func(b *testing.B, stream bool) {
		body := fmt.Sprintf(`{"model":"hearth-fake-128k","max_tokens":4096,"stream":%t,"messages":[{"role":"user","content":"What route would you suggest through the south of France?"}]}`, stream)
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		want := `"stop_reason":"end_turn"`
		if stream {
			want = "event: message_stop"
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(want)) {
			b.Fatalf("%s: %.2000s", resp.Status, raw)
		}
	}
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "messages-json", true: "messages-stream"}[stream], func(b *testing.B) {
			defer clock.start(b)()
			defer probe(b, probes)()
			for b.Loop() {
				messages(b, stream)
			}
		})
	}
}

// BenchmarkCodexHistory measures hearth's own time for the request Codex CLI sends on
// every turn of a long session: store false, the whole conversation as input (about
// 36k tokens: two long developer messages, then 30 turns of user message, sealed
// reasoning, an exec_command call with its output, and the assistant's answer),
// reasoning.encrypted_content included, streamed. Nothing is loaded from the database;
// everything is decoded, unsealed, rendered and counted per request.
//
//	go test ./server -run '^$' -bench CodexHistory -benchtime 100x
func BenchmarkCodexHistory(b *testing.B) {
	b.Setenv("HEARTH_CONTEXT_LENGTH", "1048576")
	key := seal.NewKey()
	clock := &handlerClock{h: newFakeServer(b, fakeRuntime{}, key)}
	srv := httptest.NewServer(clock)
	defer srv.Close()
	body := codexRequest(b, key, 30)
	b.Logf("request body: %d KiB", len(body)>>10)
	b.Run("codex36k", func(b *testing.B) {
		defer clock.start(b)()
		for b.Loop() {
			resp, err := http.Post(srv.URL+"/v1/responses", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte("response.completed")) {
				b.Fatalf("%s: %.2000s", resp.Status, raw)
			}
		}
	})
}

// probe starts every probe and returns what ends them all.
func probe(b *testing.B, probes []func(*testing.B) func()) func() {
	ends := make([]func(), len(probes))
	for i, p := range probes {
		ends[i] = p(b)
	}
	return func() {
		for _, end := range ends {
			end()
		}
	}
}

// handlerClock times hearth's handler: from the request handed to it (its headers
// read) to the reply written, without the client's work (building the request,
// reading and decoding the reply), which shares the machine in these benchmarks.
type handlerClock struct {
	h           http.Handler
	total, runs atomic.Int64
}

func (c *handlerClock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := time.Now()
	c.h.ServeHTTP(w, r)
	c.total.Add(int64(time.Since(t)))
	c.runs.Add(1)
}

// start starts counting b's requests; the function it returns reports their mean
// as hearth-ms/op.
func (c *handlerClock) start(b *testing.B) func() {
	c.total.Store(0)
	c.runs.Store(0)
	return func() {
		if n := c.runs.Load(); n > 0 {
			b.ReportMetric(float64(c.total.Load())/float64(n)/1e6, "hearth-ms/op")
		}
	}
}

// codexRequest is a Codex-shaped store:false request carrying turns earlier turns.
func codexRequest(b *testing.B, key *seal.Key, turns int) []byte {
	b.Helper()
	input := codexbody.Input(turns, func(int) string {
		thought, _ := json.Marshal(map[string]string{"text": codexbody.Para(600, "I should look at the file before I change it. ")})
		return key.Seal(seal.Reasoning, thought)
	})
	body, err := json.Marshal(map[string]any{
		"model": "hearth-fake-1m", "stream": true, "store": false, "input": input,
		"include": []string{"reasoning.encrypted_content"}, "reasoning": map[string]any{"summary": "auto"},
		"tool_choice": "auto", "parallel_tool_calls": true, "prompt_cache_key": "thread-1",
		"tools": []any{map[string]any{"type": "function", "name": "exec_command", "strict": false,
			"description": "Runs a command in a PTY, returning output or a session ID for ongoing interaction.",
			"parameters": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"cmd"},
				"properties": map[string]any{
					"cmd":           map[string]any{"type": "string", "description": "Shell command to execute."},
					"workdir":       map[string]any{"type": "string", "description": "Working directory."},
					"yield_time_ms": map[string]any{"type": "number"},
					"tty":           map[string]any{"type": "boolean"},
				}}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkStreamPerToken measures hearth's CPU per generated token on the streaming
// path (parse, build events, frame and write SSE, read by the client) over a fake
// runtime that streams one-token pieces: ns/token and allocs/token for 1,000 and
// 10,000 tokens. Equal allocs/token at both lengths means no allocation grows with the
// output's length.
//
//	go test ./server -run '^$' -bench StreamPerToken -benchtime 20x
func BenchmarkStreamPerToken(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tokens%d", n), func(b *testing.B) {
			srv := httptest.NewServer(newFakeServer(b, streamingRuntime{pieces: n}, nil))
			defer srv.Close()
			body := `{"model":"hearth-fake-1m","input":"Tell me a long story.","stream":true,"store":false}`
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				// The client keeps only the stream's end, so that what it allocates
				// does not count as hearth's.
				tail := streamTail(b, resp.Body)
				resp.Body.Close()
				if !bytes.HasSuffix(tail, []byte("data: [DONE]\n\n")) || !bytes.Contains(tail, []byte(fmt.Sprintf(`"output_tokens":%d,`, n))) {
					b.Fatalf("%s: %s", resp.Status, tail)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
		})
	}
}

// streamTail reads r to its end and returns its last 4 KiB or so.
func streamTail(b *testing.B, r io.Reader) []byte {
	buf := make([]byte, 8<<10)
	n := 0
	for {
		if n > len(buf)/2 {
			n = copy(buf, buf[n-len(buf)/4:n])
		}
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return buf[:n]
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// streamingRuntime is fakeRuntime answering every prompt with pieces one-token pieces.
type streamingRuntime struct {
	fakeRuntime
	pieces int
}

func (r streamingRuntime) Generate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	for i := range r.pieces {
		piece := " word"
		if i%10 == 9 {
			piece = "."
		}
		if err := fn(api.GenerateResponse{Model: req.Model, Response: piece}); err != nil {
			return err
		}
	}
	return fn(api.GenerateResponse{Model: req.Model, Done: true, DoneReason: "stop",
		Metrics: api.Metrics{PromptEvalCount: len(req.Prompt), EvalCount: r.pieces}})
}
