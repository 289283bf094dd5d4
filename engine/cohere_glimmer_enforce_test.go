package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"hearth"
)

// TestGlimmerConstrainsAFumbledHeader: a Glimmer model that writes a call's block in a
// message it addressed to no one ("<|message|>" right after the role) is read as
// calling, as Ollama's parser reads it; when that call is of a tool allowed_tools does
// not allow, the engine cuts the transcript back to the header, writes the recipient's
// marker " to=" and the allowed name, and the model writes the parameters.
func TestGlimmerConstrainsAFumbledHeader(t *testing.T) {
	show := &ModelInfo{Renderer: "glimmer", Parser: "glimmer", ContextLength: 8192, Prompt: scriptRenderer{}}
	rt := &fakeRuntime{show: show}
	fumbled := script("<|message|>", "<atem:function_calls>", "\n<atem:invoke name=\"get_weather\">", "\n",
		`<atem:parameter name="city">`, "Paris</atem:parameter>\n", "</atem:invoke>\n", "</atem:function_calls>")
	rt.write = func(transcript string, format json.RawMessage) []string {
		if len(rt.reqs) > 20 {
			t.Fatalf("%d runtime requests: the engine loops", len(rt.reqs))
		}
		if strings.HasSuffix(transcript, "<atem:invoke name=\"get_time\">\n") {
			return []string{`<atem:parameter name="timezone">`, "UTC</atem:parameter>\n", "</atem:invoke>\n", "</atem:function_calls>"}
		}
		return fumbled(transcript)
	}
	body := `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],` +
		`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`
	j := newFakeJob(t, rt, body)
	if j.Model.Format.ID != "glimmer" {
		t.Fatalf("format %s", j.Model.Format.ID)
	}
	b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
	if err := j.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(b.Response()), `completed: call[completed] get_time {"timezone":"UTC"}`; got != want {
		t.Errorf("output\n got %s\nwant %s", got, want)
	}
	want := ` to=get_time<|message|><atem:function_calls>` + "\n" + `<atem:invoke name="get_time">` + "\n"
	last := strings.TrimPrefix(rt.reqs[len(rt.reqs)-1].Prompt, rt.base)
	if !strings.HasPrefix(last, want) {
		t.Errorf("the last request continues %q, want it to start with %q", last, want)
	}
}

// TestHarmonyReasonsBeforeARequiredCall: the harmony families reason in messages (gpt-oss's
// analysis channel, Glimmer's to=self), so a required call is forced where the reasoning
// message ends, as for the families with reasoning delimiters, not before the model's
// first token: the reasoning is kept, and the engine opens the call's message after it.
func TestHarmonyReasonsBeforeARequiredCall(t *testing.T) {
	for _, c := range []struct {
		name      string
		show      *ModelInfo
		model     []string
		continues string // how the forced call's message starts after the reasoning
	}{
		{"gpt-oss", &ModelInfo{Parser: "harmony", ContextLength: 8192, Prompt: scriptRenderer{}},
			[]string{"<|channel|>analysis", "<|message|>", "Need", " the time.", "<|end|>", "<|start|>assistant<|channel|>final<|message|>", "Sure."},
			"<|channel|>analysis<|message|>Need the time.<|end|><|start|>assistant<|channel|>commentary to=functions."},
		{"glimmer", &ModelInfo{Renderer: "glimmer", Parser: "glimmer", ContextLength: 8192, Prompt: scriptRenderer{}},
			[]string{" to=self", "<|message|>", "Need", " the time.", "<|eom|>", "<|start|>assistant to=user<|message|>", "Sure."},
			" to=self<|message|>Need the time.<|eom|><|start|>assistant to="},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := &fakeRuntime{show: c.show}
			answer := script(c.model...)
			rt.write = func(transcript string, format json.RawMessage) []string {
				if len(rt.reqs) > 20 {
					t.Fatalf("%d runtime requests: the engine loops", len(rt.reqs))
				}
				switch {
				case strings.Contains(string(format), `"properties"`):
					return bytesOf(`{"timezone":"UTC"}`)
				case format != nil:
					return bytesOf(`"get_time"`)
				case strings.HasSuffix(transcript, "<atem:invoke name=\"get_time\">\n"):
					return []string{`<atem:parameter name="timezone">`, "UTC</atem:parameter>\n", "</atem:invoke>\n", "</atem:function_calls>"}
				}
				return answer(transcript)
			}
			body := `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":"required"}`
			j := newFakeJob(t, rt, body)
			if j.Model.Format.ID != c.name {
				t.Fatalf("format %s", j.Model.Format.ID)
			}
			b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
			if err := j.Run(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			if got, want := summary(b.Response()), `completed: reasoning[completed] Need the time. | call[completed] get_time {"timezone":"UTC"}`; got != want {
				t.Errorf("output\n got %s\nwant %s", got, want)
			}
			last := strings.TrimPrefix(rt.reqs[len(rt.reqs)-1].Prompt, rt.base)
			if !strings.HasPrefix(last, c.continues) {
				t.Errorf("the last request continues %q, want it to start with %q", last, c.continues)
			}
		})
	}
}

// TestGlimmerStrictCallRetried: under tool_choice auto, a strict tool's call whose ATEM
// parameters fail its schema (a required one missing) is taken back and generated once
// more, its arguments as JSON under the schema, written back as the block's parameters.
func TestGlimmerStrictCallRetried(t *testing.T) {
	show := &ModelInfo{Renderer: "glimmer", Parser: "glimmer", ContextLength: 8192, Prompt: scriptRenderer{}}
	rt := &fakeRuntime{show: show}
	var schemas int
	// The call without its required parameter.
	call := script(" to=get_time", "<|message|>", "<atem:function_calls>", "\n<atem:invoke name=\"get_time\">", "\n",
		"</atem:invoke>\n", "</atem:function_calls>")
	rt.write = func(transcript string, format json.RawMessage) []string {
		if len(rt.reqs) > 20 {
			t.Fatalf("%d runtime requests: the engine loops", len(rt.reqs))
		}
		switch {
		case strings.Contains(string(format), `"properties"`):
			schemas++
			return bytesOf(`{"timezone":"UTC"}`)
		case format != nil:
			return bytesOf(`"get_time"`)
		}
		return call(transcript)
	}
	strictTime := strings.Replace(timeTool, `"name":"get_time",`, `"name":"get_time","strict":true,`, 1)
	j := newFakeJob(t, rt, `{"model":"m","input":"hi","tools":[`+weatherTool+`,`+strictTime+`]}`)
	b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
	if err := j.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(b.Response()), `completed: call[completed] get_time {"timezone":"UTC"}`; got != want {
		t.Errorf("output\n got %s\nwant %s", got, want)
	}
	if schemas != 1 {
		t.Errorf("%d argument schemas, want 1 (the retry)", schemas)
	}
}

// TestCohereAllowedTools: a Cohere model's action of a tool allowed_tools does not allow
// is cut back to its <|START_ACTION|> (after the reasoning the prompt opened), and the
// call is generated under the array's grammar of the allowed tool, then closed by the
// engine's <|END_ACTION|>.
func TestCohereAllowedTools(t *testing.T) {
	show := &ModelInfo{Renderer: "cohere", Parser: "cohere", ContextLength: 8192, Prompt: scriptRenderer{}}
	rt := &fakeRuntime{show: show}
	var schemas []string
	model := script("Weather", " first.", "<|END_THINKING|>", "<|START_ACTION|>", `[{"tool_call_id": "0", "tool_name": "get_weather",`,
		` "parameters": {"city": "Paris"}}]`, "<|END_ACTION|>")
	rt.write = func(transcript string, format json.RawMessage) []string {
		if len(rt.reqs) > 20 {
			t.Fatalf("%d runtime requests: the engine loops", len(rt.reqs))
		}
		if format != nil {
			schemas = append(schemas, string(format))
			return bytesOf(`[{"tool_name":"get_time","parameters":{"timezone":"UTC"}}]`)
		}
		return model(transcript)
	}
	body := `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],` +
		`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`
	j := newFakeJob(t, rt, body)
	if j.Model.Format.ID != "cohere" {
		t.Fatalf("format %s", j.Model.Format.ID)
	}
	// The prompt ends inside reasoning (the renderer's <|START_THINKING|>).
	j.startInReasoning = true
	b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
	if err := j.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(b.Response()), `completed: reasoning[completed] Weather first. | call[completed] get_time {"timezone":"UTC"}`; got != want {
		t.Errorf("output\n got %s\nwant %s", got, want)
	}
	if len(schemas) != 1 || !strings.Contains(schemas[0], `"tool_name":{"const":"get_time"}`) || strings.Contains(schemas[0], "get_weather") {
		t.Errorf("call schemas %q, want one of get_time alone", schemas)
	}
	last := strings.TrimPrefix(rt.reqs[len(rt.reqs)-1].Prompt, rt.base)
	if want := `Weather first.<|END_THINKING|><|START_ACTION|>[{"tool_name":"get_time","parameters":{"timezone":"UTC"}}]<|END_ACTION|>`; !strings.HasPrefix(last, want) {
		t.Errorf("the last request continues %q, want %q", last, want)
	}
}
