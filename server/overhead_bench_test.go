package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkResponseOverhead measures what hearth itself adds to a response: the whole
// HTTP path of POST /v1/responses (decode, chain lookup, model lookup, prompt rendering,
// parsing the generated text, storing the response and its items with fsync, JSON or
// SSE) over a runtime that answers at once with four pieces (fakeRuntime). The
// end-to-end bench (make bench) compares hearth with the runtime on a real model, where
// this cost is lost in run-to-run noise; here it is alone. Divide ms/op by the floor's
// time to first token in the bench's report for hearth's share of it.
//
//	go test ./server -run '^$' -bench ResponseOverhead -benchtime 200x
func BenchmarkResponseOverhead(b *testing.B) {
	// Room for the 1,000-turn chain (the default window is 16k).
	b.Setenv("HEARTH_CONTEXT_LENGTH", "131072")
	srv := httptest.NewServer(newFakeRuntimeServer(b))
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
		for b.Loop() {
			post(b, `{`+model+`}`)
		}
	})
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			post(b, `{`+model+`,"stream":true}`)
		}
	})
	// A turn that continues a chain: the chain is loaded, and its prompt spliced onto
	// the previous turn's (engine/ollama/incremental.go).
	for _, turns := range []int{20, 200, 1000} {
		b.Run(fmt.Sprintf("turn%d", turns), func(b *testing.B) {
			id := ""
			for turn := 1; turn < turns; turn++ {
				prev := ""
				if id != "" {
					prev = `,"previous_response_id":"` + id + `"`
				}
				id = post(b, `{`+model+prev+`}`)["id"].(string)
			}
			for b.Loop() {
				post(b, `{`+model+`,"previous_response_id":"`+id+`"}`)
			}
		})
	}
}
