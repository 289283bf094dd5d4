package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/scriptmodel"
)

// cacheSlotUse matches the runner's debug line for each generation (Ollama 0.17.4 to 0.24.0,
// runner/ollamarunner/cache.go; from Ollama 0.30 on llama.cpp's llama-server, which Ollama
// logs as its own): the slot it took and how many prompt tokens it found there.
var cacheSlotUse = regexp.MustCompile(`msg="loading cache slot" id=(\d+) .* used=(\d+)|slot +\S+ id +(\d+) \| task \d+ \| cached n_tokens = (\d+)`)

// TestKVSlotsCachedTokensE2E: over a real `ollama serve` with two parallel slots (and
// its debug log, which says how many tokens each generation found in its KV cache
// slot), two conversations that started side by side each keep a slot of their own,
// and hearth's cached_tokens equals what the runtime really reused, turn by turn. With
// one remembered sequence per model (hearth before it mirrored the slots) every later
// turn would have reported only the template's start.
func TestKVSlotsCachedTokensE2E(t *testing.T) {
	rt := testenv.StartServer(t, "OLLAMA_NUM_PARALLEL=2", "OLLAMA_DEBUG=1")
	_, model := testenv.BenchModel(t, scriptmodel.LongModel)
	srv, _ := servePool(t, wire.Config{Admission: admission.Config{Slots: 2}}, rt.Runtime)

	// Load the model before counting the runner's lines (a load generates nothing).
	create := func(extra string) *hearth.Response {
		t.Helper()
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, false, `"temperature":0,`+extra))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var r hearth.Response
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	create(`"input":"warm up"`)
	logStart := len(rt.Log())

	// Turn 1 of A streams; B starts while A is still generating, so the runtime gives
	// it the other slot (a free slot sharing the longest prefix wins, and A's is busy).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, events := openStream(t, ctx, srv.URL, "", reqBody(model, true, `"temperature":0,"input":"Conversation A begins."`))
	defer stream.Body.Close()
	for {
		typ, _ := events.next(t)
		if typ == "response.output_text.delta" {
			break
		}
	}
	b := []*hearth.Response{create(`"input":"Conversation B begins."`)}
	var a []*hearth.Response
	for {
		typ, data := events.next(t)
		if typ == "response.completed" {
			raw, _ := json.Marshal(data["response"])
			var r hearth.Response
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			a = append(a, &r)
			break
		}
		if typ == "[DONE]" || typ == "response.failed" || typ == "error" {
			t.Fatalf("A's first turn ended with %s", typ)
		}
	}
	// Later turns one after another: each finds its own slot.
	for turn := 2; turn <= 3; turn++ {
		for _, c := range []*[]*hearth.Response{&a, &b} {
			prev := (*c)[len(*c)-1]
			*c = append(*c, create(`"previous_response_id":"`+prev.ID+`","input":"Go on, turn `+strconv.Itoa(turn)+`."`))
		}
	}

	var used []int
	slots := map[string]bool{}
	for _, m := range cacheSlotUse.FindAllStringSubmatch(rt.Log()[logStart:], -1) {
		if m[1] == "" { // llama-server's line
			m = m[2:]
		}
		n, _ := strconv.Atoi(m[2])
		used = append(used, n)
		slots[m[1]] = true
	}
	// The runner's order: A1, B1, then A2, B2, A3, B3.
	order := []*hearth.Response{a[0], b[0], a[1], b[1], a[2], b[2]}
	names := []string{"A1", "B1", "A2", "B2", "A3", "B3"}
	if len(used) != len(order) {
		t.Fatalf("the runner logged %d generations, want %d: %v", len(used), len(order), used)
	}
	if len(slots) != 2 {
		t.Errorf("the runner used slots %v, want two", slots)
	}
	for i, r := range order {
		if r.Status != "completed" || r.Usage == nil {
			t.Fatalf("%s: status %s", names[i], r.Status)
		}
		got := int(r.Usage.InputTokensDetails.CachedTokens)
		switch {
		case i >= 2 && got != used[i]:
			t.Errorf("%s: cached_tokens %d, the runtime reused %d (input %d)", names[i], got, used[i], r.Usage.InputTokens)
		case got > used[i]:
			// A first turn shares only the template's start with what its slot held
			// (the warm-up's prompt): hearth estimates that part's tokens from the
			// text's density, never more than the runtime reused.
			t.Errorf("%s: cached_tokens %d, more than the runtime reused (%d)", names[i], got, used[i])
		}
	}
	// Each later turn reused its whole previous turn: prompt and answer, less the
	// last token sampled (never evaluated).
	for i := 2; i < len(order); i++ {
		prev := order[i-2].Usage
		if whole := int(prev.InputTokens+prev.OutputTokens) - 1; used[i] != whole {
			t.Errorf("%s reused %d tokens, want its previous turn's %d", names[i], used[i], whole)
		}
	}
	if t.Failed() {
		t.Logf("runner log:\n%s", strings.Join(cacheSlotUse.FindAllString(rt.Log()[logStart:], -1), "\n"))
	}
}
