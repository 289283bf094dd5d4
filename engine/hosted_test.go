package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/mcp"
	"hearth/scriptmodel"
)

// These tests run MCP's hosted tool kind (package mcp) through the engine, on the fake
// runtime, with fakeHosted for the servers: the kind's control flow (listings, names,
// calls, turns, approvals). server/mcp*_e2e_test.go run it over real MCP servers.

// fakeHosted is one MCP server with the tools echo and boom (which fails).
type fakeHosted struct {
	calls []string
	lists int
	// block, when set, makes a call wait for its context.
	block bool
}

func (f *fakeHosted) ListTools(_ context.Context, s mcp.Ref) ([]mcp.Tool, error) {
	switch {
	case s.URL != "":
		return nil, fmt.Errorf("%w: %s", mcp.ErrServerRefused, s.URL)
	case s.Label != "srv":
		return nil, fmt.Errorf("%w: %s", mcp.ErrUnknownServer, s.Label)
	}
	f.lists++
	return []mcp.Tool{
		{Name: "echo", Description: "Echoes", InputSchema: json.RawMessage(`{"type":"object","properties":{"m":{"type":"string"}},"required":["m"]}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		{Name: "boom", Description: "Fails", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
	}, nil
}

func (f *fakeHosted) CallTool(ctx context.Context, s mcp.Ref, name string, args json.RawMessage) (mcp.Result, error) {
	f.calls = append(f.calls, name+" "+string(args))
	if f.block {
		<-ctx.Done()
		return mcp.Result{}, ctx.Err()
	}
	if name == "boom" {
		return mcp.Result{}, errors.New("the server is down")
	}
	var a struct{ M string }
	json.Unmarshal(args, &a)
	return mcp.Result{Output: "Echo: " + a.M}, nil
}

func (f *fakeHosted) KeyAllowed(label, key string) bool { return true }

// withMCP is an engine over rt with the MCP kind over h (none configured when h is nil).
func withMCP(rt engine.Runtime, h *fakeHosted) *engine.Engine {
	e := engine.New(rt, engine.DefaultFormats(), nil)
	var servers mcp.Servers
	if h != nil {
		servers = h
	}
	e.RegisterHosted(mcp.NewKind(servers, nil))
	return e
}

// turnModel writes call after the user's turn and answer after tool results: the
// script model's two situations, told apart by the prompt's last entry token.
func turnModel(call, answer []string) func(string, json.RawMessage) []string {
	return func(transcript string, _ json.RawMessage) []string {
		// The first request's prompt is the runtime's base, so its entry token is not
		// in the transcript: the model then follows call.
		tokens, out := call, transcript
		if i := strings.LastIndex(transcript, scriptmodel.EntryAssistant); i >= 0 {
			out = transcript[i+len(scriptmodel.EntryAssistant):]
		}
		if i := strings.LastIndex(transcript, scriptmodel.EntryAnswer); i >= 0 && i > strings.LastIndex(transcript, scriptmodel.EntryAssistant) {
			tokens, out = answer, transcript[i+len(scriptmodel.EntryAnswer):]
		}
		return engine.Script(tokens...)(out)
	}
}

func hostedJob(t *testing.T, rt engine.Runtime, h *fakeHosted, body string, history []hearth.Item) (*engine.Job, error) {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return withMCP(rt, h).Prepare(context.Background(), req, history, engine.Inputs{})
}

func runHosted(t *testing.T, j *engine.Job, ctx context.Context) *hearth.Response {
	t.Helper()
	b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, engine.TimeZero), nil)
	j.Run(ctx, b)
	return b.Response()
}

func hostedSummary(r *hearth.Response) string {
	var parts []string
	for _, it := range r.Output {
		switch it.Type {
		case mcp.ItemMCPListTools:
			var names []string
			for _, tool := range mcp.Of(it).MCPTools {
				names = append(names, tool.Name)
			}
			parts = append(parts, fmt.Sprintf("list %s %s", mcp.Of(it).ServerLabel, strings.Join(names, ",")))
		case mcp.ItemMCPCall:
			parts = append(parts, fmt.Sprintf("mcp[%s] %s %s -> %q err %q", it.Status, it.Name, it.Arguments, it.Output.Text, mcp.Of(it).Error))
		case hearth.ItemFunctionCall:
			parts = append(parts, fmt.Sprintf("call %s %s", it.Name, it.Arguments))
		case hearth.ItemMessage:
			parts = append(parts, "message "+it.Text(hearth.PartOutputText))
		default:
			parts = append(parts, it.Type)
		}
	}
	s := r.Status + ": " + strings.Join(parts, " | ")
	if r.IncompleteDetails != nil {
		s += " (" + r.IncompleteDetails.Reason + ")"
	}
	return s
}

func hermes(calls ...string) []string {
	var out []string
	for _, c := range calls {
		out = append(out, "<tool_call>", c, "</tool_call>")
	}
	return out
}

// TestHostedTurns: the engine runs hosted calls and continues the model; a name a
// function tool already has is shown as <label>__<name>; function calls still end
// the response; max_tool_calls counts every turn; a failed call is the model's to read.
func TestHostedTurns(t *testing.T) {
	mcpTool := `{"type":"mcp","server_label":"srv","require_approval":"never"}`
	echoFn := `{"type":"function","name":"echo","parameters":{"type":"object"}}`
	for _, tc := range []struct {
		name, body string
		call       []string
		answer     []string // after tool results; default "Done."
		want       string
		calls      int
		turns      int
	}{
		{
			name:  "one call, then the answer",
			body:  `"tools":[` + mcpTool + `]`,
			call:  hermes(`{"name":"echo","arguments":{"m":"hi"}}`),
			want:  `completed: list srv echo,boom | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | message Done.`,
			calls: 1, turns: 2,
		},
		{
			name:  "a name a function has",
			body:  `"tools":[` + echoFn + `,` + mcpTool + `]`,
			call:  hermes(`{"name":"srv__echo","arguments":{"m":"hi"}}`),
			want:  `completed: list srv echo,boom | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | message Done.`,
			calls: 1, turns: 2,
		},
		{
			name:  "a function call ends the response after the hosted call ran",
			body:  `"tools":[` + echoFn + `,` + mcpTool + `]`,
			call:  hermes(`{"name":"srv__echo","arguments":{"m":"hi"}}`, `{"name":"echo","arguments":{}}`),
			want:  `completed: list srv echo,boom | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | call echo {}`,
			calls: 1, turns: 1,
		},
		{
			name:  "a failed call is read by the model",
			body:  `"tools":[` + mcpTool + `]`,
			call:  hermes(`{"name":"boom","arguments":{}}`),
			want:  `completed: list srv echo,boom | mcp[failed] boom {} -> "" err "the server is down" | message Done.`,
			calls: 1, turns: 2,
		},
		{
			name:   "max_tool_calls counts every turn",
			body:   `"max_tool_calls":2,"tools":[` + mcpTool + `]`,
			call:   hermes(`{"name":"echo","arguments":{"m":"hi"}}`),
			answer: hermes(`{"name":"echo","arguments":{"m":"again"}}`),
			// A model that calls after every result: two calls, then tool_choice none
			// ends its third call at the opener.
			want: `completed: list srv echo,boom | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | ` +
				`mcp[completed] echo {"m":"again"} -> "Echo: again" err ""`,
			calls: 2, turns: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := tc.answer
			if answer == nil {
				answer = []string{"Done."}
			}
			rt := engine.NewFakeRuntime(turnModel(tc.call, answer))
			h := &fakeHosted{}
			j, err := hostedJob(t, rt, h, `{"model":"m","input":"hi",`+tc.body+`}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := runHosted(t, j, context.Background())
			if got := hostedSummary(r); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if len(h.calls) != tc.calls {
				t.Errorf("calls %q", h.calls)
			}
			turns := 0
			for _, p := range rt.Prompts() {
				// A phase of the enforced path continues its turn's prompt.
				if strings.HasSuffix(p, scriptmodel.EntryAssistant) || strings.HasSuffix(p, scriptmodel.EntryAnswer) {
					turns++
				}
			}
			if turns != tc.turns {
				t.Errorf("%d turns, want %d", turns, tc.turns)
			}
			if strings.Contains(rt.Prompts()[0], `"name":"srv__echo"`) != strings.Contains(tc.body, echoFn) {
				t.Errorf("the prompt's tools: %s", rt.Prompts()[0])
			}
		})
	}
}

// TestHostedRequestErrors: an unknown label, a refused URL, a tool_choice the server
// does not offer, and hearth with no servers are 400s naming the field.
func TestHostedRequestErrors(t *testing.T) {
	rt := engine.NewFakeRuntime(turnModel([]string{"x"}, []string{"x"}))
	for _, tc := range []struct {
		body, param string
		h           *fakeHosted
	}{
		{`"tools":[{"type":"mcp","server_label":"other"}]`, "tools[0].server_label", &fakeHosted{}},
		{`"tools":[{"type":"mcp","server_label":"x","server_url":"https://e.com/mcp"}]`, "tools[0].server_url", &fakeHosted{}},
		{`"tools":[{"type":"mcp","server_label":"srv"}],"tool_choice":{"type":"mcp","server_label":"srv","name":"nope"}`, "tool_choice.name", &fakeHosted{}},
		{`"tools":[{"type":"mcp","server_label":"srv"}]`, "tools[0].server_label", nil},
	} {
		_, err := hostedJob(t, rt, tc.h, `{"model":"m","input":"hi",`+tc.body+`}`, nil)
		var e *hearth.Error
		if !errors.As(err, &e) || e.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.body, err, tc.param)
		}
	}
}

// TestHostedCallCancelled: the client leaving while a hosted call runs ends the
// response incomplete at once, the call's item incomplete.
func TestHostedCallCancelled(t *testing.T) {
	rt := engine.NewFakeRuntime(turnModel(hermes(`{"name":"echo","arguments":{"m":"hi"}}`), []string{"Done."}))
	h := &fakeHosted{block: true}
	j, err := hostedJob(t, rt, h, `{"model":"m","input":"hi","tools":[{"type":"mcp","server_label":"srv","require_approval":"never"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, engine.TimeZero), func(e hearth.Event) {
		if e.Type == mcp.EventMCPCallArgumentsDone {
			cancel()
		}
	})
	j.Run(ctx, b)
	if got, want := hostedSummary(b.Response()), `incomplete: list srv echo,boom | mcp[incomplete] echo {"m":"hi"} -> "" err "" (client_disconnected)`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestHostedListingOncePerResponse: allowed_tools naming a tool the server lacks lists
// the server again for a continuation, but not in every turn of one response.
func TestHostedListingOncePerResponse(t *testing.T) {
	rt := engine.NewFakeRuntime(turnModel(hermes(`{"name":"echo","arguments":{"m":"hi"}}`), []string{"Done."}))
	tools := `"tools":[{"type":"mcp","server_label":"srv","allowed_tools":["echo","gone"],"require_approval":"never"}]`
	j, err := hostedJob(t, rt, &fakeHosted{}, `{"model":"m","input":"hi",`+tools+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := runHosted(t, j, context.Background())
	if got, want := hostedSummary(r), `completed: list srv echo | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | message Done.`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The next request, after the chain, lists again: "gone" may be there now.
	h := &fakeHosted{}
	if _, err := hostedJob(t, rt, h, `{"model":"m","input":"again",`+tools+`}`, r.Output); err != nil {
		t.Fatal(err)
	}
	if h.lists != 1 {
		t.Errorf("continuation listings %d, want 1", h.lists)
	}
	// With every allowed tool in the chain's listing, the continuation reuses it.
	tools = `"tools":[{"type":"mcp","server_label":"srv","allowed_tools":["echo"],"require_approval":"never"}]`
	h = &fakeHosted{}
	if _, err := hostedJob(t, rt, h, `{"model":"m","input":"again",`+tools+`}`, r.Output); err != nil {
		t.Fatal(err)
	}
	if h.lists != 0 {
		t.Errorf("continuation listings %d, want the chain's reused", h.lists)
	}
}

// allowed_tools {"read_only": true} offers only the tools the server marks read-only
// (readOnlyHint), and require_approval {"never": {"read_only": true}} runs those without
// asking while the others still ask.
func TestHostedReadOnly(t *testing.T) {
	rt := engine.NewFakeRuntime(turnModel(hermes(`{"name":"echo","arguments":{"m":"hi"}}`), []string{"Done."}))
	j, err := hostedJob(t, rt, &fakeHosted{}, `{"model":"m","input":"hi","tools":[{"type":"mcp","server_label":"srv","allowed_tools":{"read_only":true},"require_approval":"never"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := runHosted(t, j, context.Background())
	if got, want := hostedSummary(r), `completed: list srv echo | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | message Done.`; got != want {
		t.Errorf("read_only allowed tools:\n got  %s\nwant %s", got, want)
	}
	tools := `"tools":[{"type":"mcp","server_label":"srv","require_approval":{"never":{"read_only":true}}}]`
	j, err = hostedJob(t, rt, &fakeHosted{}, `{"model":"m","input":"hi",`+tools+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = runHosted(t, j, context.Background())
	if got, want := hostedSummary(r), `completed: list srv echo,boom | mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | message Done.`; got != want {
		t.Errorf("read_only never asks:\n got  %s\nwant %s", got, want)
	}
	// boom is not read-only: its call asks.
	rt = engine.NewFakeRuntime(turnModel(hermes(`{"name":"boom","arguments":{}}`), []string{"Done."}))
	j, err = hostedJob(t, rt, &fakeHosted{}, `{"model":"m","input":"hi",`+tools+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = runHosted(t, j, context.Background())
	if got, want := hostedSummary(r), `completed: list srv echo,boom | mcp_approval_request`; got != want {
		t.Errorf("a tool not read-only asks:\n got  %s\nwant %s", got, want)
	}
}
