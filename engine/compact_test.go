package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"hearth"
	"hearth/internal/seal"
)

func decodeCompact(t *testing.T, body string) *hearth.CreateResponseRequest {
	t.Helper()
	req, _, err := hearth.DecodeCompactRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestCompactionKeeps: which items the compacted window keeps verbatim, in order
// (system/developer messages and the last user message), with the summary after them.
func TestCompactionKeeps(t *testing.T) {
	const (
		dev  = `{"role":"developer","content":"rules"}`
		sys  = `{"role":"system","content":"more rules"}`
		u1   = `{"role":"user","content":"one"}`
		u2   = `{"role":"user","content":"two"}`
		a    = `{"role":"assistant","content":"ok"}`
		call = `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`
		out  = `{"type":"function_call_output","call_id":"c1","output":"done"}`
	)
	tests := []struct {
		name  string
		input []string
		kept  []string
	}{
		{"earlier turns", []string{dev, u1, a, u2, a}, []string{"developer: rules", "user: two"}},
		{"a tool loop after the only request", []string{dev, u1, call, out, call, out}, []string{"developer: rules", "user: one"}},
		{"instructions anywhere keep their place", []string{u1, a, sys, u2, call, out, dev}, []string{"system: more rules", "user: two", "developer: rules"}},
		{"no user message", []string{dev, a, call, out}, []string{"developer: rules"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &fakeRuntime{show: qwenShow(), write: func(string, json.RawMessage) []string { return []string{"The ", "summary."} }}
			e := New(rt, DefaultFormats(), nil)
			c, err := e.PrepareCompaction(context.Background(),
				decodeCompact(t, `{"model":"m","input":[`+strings.Join(tt.input, ",")+`]}`), nil, Inputs{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(c.Prompt(), CompactionPrompt+"<|end|>\n<|assistant|>") {
				t.Errorf("the prompt does not end with the summary request: %q", c.Prompt())
			}
			output, usage, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, it := range output[:len(output)-1] {
				kept = append(kept, it.Role+": "+it.Text())
			}
			if strings.Join(kept, "|") != strings.Join(tt.kept, "|") {
				t.Errorf("kept %q, want %q", kept, tt.kept)
			}
			last := output[len(output)-1]
			plain, err := e.Seal.Open(seal.Compaction, last.EncryptedContent)
			if err != nil || string(plain) != `{"summary":"The summary."}` || last.Type != hearth.ItemCompaction {
				t.Errorf("compaction item %+v opens to %s, %v", last, plain, err)
			}
			if usage.OutputTokens != 3 || usage.InputTokens != len(c.Prompt()) {
				t.Errorf("usage %+v", usage)
			}
		})
	}
}

// TestCompactionNoSummary: a model that only reasons, only calls a tool it was not
// offered, or writes nothing, does not fail the compaction: the item carries
// FallbackNote and the latest items it replaces, and Fallback says so.
func TestCompactionNoSummary(t *testing.T) {
	for _, write := range [][]string{
		{"<think>", "hmm", "</think>"},
		append([]string{"<think>", "hmm", "</think>", "<tool_call>"}, bytesOf(`{"name": "get_weather", "arguments": {"city": "Paris"}}`)...),
		nil,
	} {
		rt := &fakeRuntime{show: qwenShow(), write: func(string, json.RawMessage) []string { return write }}
		e := New(rt, DefaultFormats(), nil)
		c, err := e.PrepareCompaction(context.Background(),
			decodeCompact(t, `{"model":"m","input":[{"role":"user","content":"a"},{"role":"assistant","content":"ok"},`+
				`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"done"},`+
				`{"role":"user","content":"b"}]}`), nil, Inputs{})
		if err != nil {
			t.Fatal(err)
		}
		output, _, err := c.Run(context.Background())
		if err != nil || !c.Fallback {
			t.Fatalf("model writes %q: %v, fallback %v", write, err, c.Fallback)
		}
		plain, err := e.Seal.Open(seal.Compaction, output[len(output)-1].EncryptedContent)
		var p struct{ Summary string }
		json.Unmarshal(plain, &p)
		want := FallbackNote + "\n\nuser: a\nassistant: ok\ncall f({})\nresult: done"
		if err != nil || p.Summary != want {
			t.Errorf("model writes %q: summary %q, want %q (%v)", write, p.Summary, want, err)
		}
	}
}

// TestEncryptedReasoningEveryPath: reasoning is sealed however its item ends: by its
// closing tag, by a tool call the policy enforces, or cut by max_output_tokens.
func TestEncryptedReasoningEveryPath(t *testing.T) {
	tests := []struct {
		name, body string
		write      []string
		status     string
	}{
		{"closed", `"input":"hi"`, []string{"<think>", "Let me ", "think.", "</think>", "Hi!"}, hearth.StatusCompleted},
		{"before an enforced call", `"input":"hi","tools":[` + weatherTool + `],"tool_choice":"required"`,
			append([]string{"<think>", "Let me ", "think.", "</think>", "<tool_call>"}, bytesOf(`{"name": "get_weather", "arguments": {"city": "Paris"}}`)...), hearth.StatusCompleted},
		{"cut by the budget", `"input":"hi","max_output_tokens":16`, append([]string{"<think>", "Let me ", "think."}, bytesOf(strings.Repeat("x", 20))...), hearth.StatusIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &fakeRuntime{show: qwenShow(), write: func(tr string, _ json.RawMessage) []string { return script(tt.write...)(tr) }}
			j := newFakeJob(t, rt, `{"model":"m","include":["reasoning.encrypted_content"],`+tt.body+`}`)
			b := hearth.NewBuilder(hearth.NewResponse("resp_1", j.req, timeZero), nil)
			j.Run(context.Background(), b)
			r := b.Response()
			if r.Status != tt.status || r.Output[0].Type != hearth.ItemReasoning {
				t.Fatalf("%s", summary(r))
			}
			plain, err := j.e.Seal.Open(seal.Reasoning, r.Output[0].EncryptedContent)
			want, _ := json.Marshal(map[string]string{"text": r.Output[0].Text(hearth.PartReasoningText)})
			if err != nil || string(plain) != string(want) {
				t.Errorf("encrypted_content opens to %s, %v; want %s", plain, err, want)
			}
		})
	}
}

// TestOpenSealedParams: a bad blob is named where the caller knows it: its input index,
// or the chain for stored items; stored items with content are not reopened.
func TestOpenSealedParams(t *testing.T) {
	e := New(&fakeRuntime{show: qwenShow()}, DefaultFormats(), nil)
	good := e.sealReasoning(hearth.Item{Type: hearth.ItemReasoning, Content: []hearth.ContentPart{itPart(hearth.PartReasoningText, "thought")}})
	bad := seal.NewKey().Seal(seal.Reasoning, []byte(`{"text":"x"}`))
	rs := func(blob string, content ...string) hearth.Item {
		it := hearth.Item{Type: hearth.ItemReasoning, EncryptedContent: blob}
		for _, c := range content {
			it.Content = append(it.Content, itPart(hearth.PartReasoningText, c))
		}
		return it
	}
	_, in, err := e.openSealed(nil, []hearth.Item{itUser("a"), rs(good)})
	if err != nil || reasoningText(&in[1]) != "thought" || in[1].EncryptedContent != "" {
		t.Fatalf("open: %+v, %v", in, err)
	}
	// The sealed text wins over content the client sent along with it.
	if _, in, _ := e.openSealed(nil, []hearth.Item{rs(good, "edited")}); reasoningText(&in[0]) != "thought" {
		t.Errorf("content sent with a blob: rendered %q", reasoningText(&in[0]))
	}
	for _, tt := range []struct {
		history, input []hearth.Item
		param, inMsg   string
	}{
		{nil, []hearth.Item{itUser("a"), rs(bad)}, "input[1].encrypted_content", "another hearth server"},
		{nil, []hearth.Item{itUser("a"), rs(bad, "text too")}, "input[1].encrypted_content", "another hearth server"},
		{[]hearth.Item{itUser("a"), rs(bad)}, nil, "previous_response_id", "item 1 of the previous response chain"},
	} {
		_, _, err := e.openSealed(tt.history, tt.input)
		var he *hearth.Error
		if !errors.As(err, &he) || he.Param != tt.param || he.Code != CodeInvalidEncryptedContent || !strings.Contains(he.Message, tt.inMsg) {
			t.Errorf("got %v; want %s containing %q", err, tt.param, tt.inMsg)
		}
	}
	// A stored item that has its content needs no key.
	if h, _, err := e.openSealed([]hearth.Item{rs(bad, "stored")}, nil); err != nil || reasoningText(&h[0]) != "stored" {
		t.Errorf("stored item with content: %v", err)
	}
}

// TestOpenedCache: a blob opened once is served from the cache to the same key, with
// the same item as opening it; another key does not get it (it cannot open the blob).
func TestOpenedCache(t *testing.T) {
	e := New(&fakeRuntime{show: qwenShow()}, DefaultFormats(), nil)
	blob := e.sealReasoning(hearth.Item{Type: hearth.ItemReasoning, Content: []hearth.ContentPart{itPart(hearth.PartReasoningText, "cached thought")}})
	it := hearth.Item{Type: hearth.ItemReasoning, ID: "rs_1", EncryptedContent: blob}
	before := ReadOpenedCacheStats()
	first, err := e.openItem(it)
	if err != nil {
		t.Fatal(err)
	}
	if st := ReadOpenedCacheStats(); st.Misses != before.Misses+1 || st.Hits != before.Hits || st.Bytes > st.Budget {
		t.Fatalf("stats after opening a blob: %+v, before %+v", st, before)
	}
	second, err := e.openItem(it)
	if err != nil || !reflect.DeepEqual(first, second) || reasoningText(&second) != "cached thought" || second.EncryptedContent != "" {
		t.Fatalf("from the cache: %+v (%v); first %+v", second, err, first)
	}
	if st := ReadOpenedCacheStats(); st.Hits != before.Hits+1 {
		t.Fatalf("stats after opening it again: %+v, before %+v", st, before)
	}
	other := New(&fakeRuntime{show: qwenShow()}, DefaultFormats(), nil)
	if other.Seal == e.Seal {
		t.Fatal("two engines share a key")
	}
	if _, err := other.openItem(it); err == nil {
		t.Error("another key opened the blob (from the cache)")
	}
}
