package engine

import (
	"context"
	"errors"
	"testing"

	"hearth"
	"hearth/toolgrammar"
)

// A runtime that cannot give log probabilities refuses them with a 400 naming the
// field that asked; one that can is asked for them, with the alternatives.
func TestLogprobsRequest(t *testing.T) {
	old := qwenShow()
	old.NoLogprobs = "the runtime is Ollama 0.12.3"
	for _, tc := range []struct {
		body, param string
		top         int
	}{
		{`{"model":"m","input":"hi","include":["message.output_text.logprobs"]}`, "include", 0},
		{`{"model":"m","input":"hi","top_logprobs":2}`, "top_logprobs", 2},
		{`{"model":"m","input":"hi","top_logprobs":2,"include":["message.output_text.logprobs"]}`, "include", 2},
	} {
		req, _, err := hearth.DecodeCreateRequest([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(&fakeRuntime{show: old}, DefaultFormats(), nil).Prepare(context.Background(), req, nil, Inputs{})
		var apiErr *hearth.Error
		if !errors.As(err, &apiErr) || apiErr.Param != tc.param || apiErr.Status != 400 {
			t.Errorf("%s: %v, want a 400 naming %s", tc.body, err, tc.param)
		}
		j := newFakeJob(t, &fakeRuntime{show: qwenShow()}, tc.body)
		if !j.gen.Logprobs || j.gen.TopLogprobs != tc.top {
			t.Errorf("%s: asks the runtime logprobs=%v top=%d", tc.body, j.gen.Logprobs, j.gen.TopLogprobs)
		}
	}
	if j := newFakeJob(t, &fakeRuntime{show: old}, `{"model":"m","input":"hi","top_logprobs":0}`); j.gen.Logprobs {
		t.Error("top_logprobs 0 alone asks for log probabilities")
	}
}

// Tokens go to the text delta whose offset reaches their end; other events drop theirs;
// a token whose text a stop string cut ends at its chunk's end.
func TestTokenLog(t *testing.T) {
	lp := func(tok string) hearth.LogProb {
		b := make([]int, len(tok))
		for i := range tok {
			b[i] = int(tok[i])
		}
		return hearth.LogProb{Token: tok, Bytes: b}
	}
	var l tokenLog
	l.add(0, "<think>", []hearth.LogProb{lp("<think>")})
	l.add(7, "hm</think>", []hearth.LogProb{lp("hm"), lp("</think>")})
	l.add(17, "Hi there", []hearth.LogProb{lp("Hi"), lp(" there<|stop|>")})
	if got := l.eventLogprobs(toolgrammar.Event{Kind: toolgrammar.ReasoningDelta, Offset: 9}); got != nil {
		t.Errorf("reasoning delta got %v", got)
	}
	if got := l.eventLogprobs(toolgrammar.Event{Kind: toolgrammar.ReasoningEnd, Offset: 17}); got != nil {
		t.Errorf("reasoning end got %v", got)
	}
	if got := l.eventLogprobs(toolgrammar.Event{Kind: toolgrammar.TextDelta, Offset: 18}); got == nil || len(got) != 0 {
		t.Errorf("a delta before its token ends: %v, want an empty list", got)
	}
	got := l.eventLogprobs(toolgrammar.Event{Kind: toolgrammar.TextDelta, Offset: 25})
	if len(got) != 2 || got[0].Token != "Hi" || got[1].Token != " there<|stop|>" {
		t.Errorf("text delta got %v, want Hi and the cut token", got)
	}
	l.add(25, "abc", []hearth.LogProb{lp("a"), lp("bc")})
	l.cut(26)
	if got := l.take(100); len(got) != 1 || got[0].Token != "a" {
		t.Errorf("after a rewind: %v", got)
	}
}
