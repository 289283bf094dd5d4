package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/mcp"
)

// echoKind is a hosted tool kind of this test only: a request's {"type": "echo"} tool
// offers the model the function shout, whose call hearth runs itself and answers with
// the text in capitals. It reports its calls with the builder's hosted-call items
// (mcp_call, server "echo"): a real kind adds its own item type to the root package.
type echoKind struct {
	plans int
	calls []string
}

func (k *echoKind) ToolType() string          { return "echo" }
func (k *echoKind) Owns(itemType string) bool { return itemType == mcp.ItemMCPCall }

func (k *echoKind) Plan(_ context.Context, r *engine.HostedRequest) (engine.HostedPlan, error) {
	k.plans++
	name := "shout"
	if r.Taken(name) {
		name = "echo__shout"
	}
	params := json.RawMessage(`{"type":"object","properties":{"m":{"type":"string"}},"required":["m"]}`)
	strict := r.Grammar(name, params) == nil
	return &echoPlan{k: k, tool: hearth.Tool{Type: hearth.ToolFunction, Name: name, Parameters: params, Strict: &strict}}, nil
}

// AsCalls shows each shout the model made as the call and its result.
func (k *echoKind) AsCalls(items, _ []hearth.Item) []hearth.Item {
	return (&echoPlan{tool: hearth.Tool{Name: "shout"}}).AsCalls(items, nil)
}

type echoPlan struct {
	k    *echoKind
	tool hearth.Tool
}

func (p *echoPlan) Tools() []hearth.Tool                                { return []hearth.Tool{p.tool} }
func (p *echoPlan) ToolChoice() *hearth.ToolChoice                      { return nil }
func (p *echoPlan) Attach(*hearth.Builder)                              {}
func (p *echoPlan) Start(context.Context, *hearth.Builder) (int, error) { return 0, nil }

func (p *echoPlan) Call(name string) (engine.HostedCall, bool) {
	return p, name == p.tool.Name
}

func (p *echoPlan) Begin(b *hearth.Builder) error { return mcp.StartCall(b, "echo", "shout", "") }

func (p *echoPlan) End(_ context.Context, b *hearth.Builder, arguments string) (bool, error) {
	p.k.calls = append(p.k.calls, arguments)
	var a struct{ M string }
	json.Unmarshal([]byte(arguments), &a)
	return true, mcp.EndCall(b, strings.ToUpper(a.M), "")
}

func (p *echoPlan) AsCalls(items, _ []hearth.Item) []hearth.Item {
	var out []hearth.Item
	for _, it := range items {
		if it.Type != mcp.ItemMCPCall {
			out = append(out, it)
			continue
		}
		out = append(out,
			hearth.Item{Type: hearth.ItemFunctionCall, CallID: it.ID, Name: p.tool.Name, Arguments: it.Arguments, Status: hearth.StatusCompleted},
			hearth.Item{Type: hearth.ItemFunctionCallOutput, CallID: it.ID, Output: hearth.ToolOutput{Text: it.Output.Text}})
	}
	return out
}

// TestHostedKindSeam: a kind registered with the engine is asked for what the model
// is offered, runs the call the model makes (the model then goes on with the result,
// as the kind's AsCalls shows it), takes another name where the request's own tools
// have its name, and renders its items of a stored chain that no longer offers its
// tools. An engine without the kind ignores the tool, as any hosted tool it cannot run.
func TestHostedKindSeam(t *testing.T) {
	run := func(k *echoKind, model func(string, json.RawMessage) []string, body string, history []hearth.Item) (*hearth.Response, []string) {
		t.Helper()
		rt := engine.NewFakeRuntime(model)
		e := engine.New(rt, engine.DefaultFormats(), nil)
		if k != nil {
			e.RegisterHosted(k)
		}
		req, _, err := hearth.DecodeCreateRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		j, err := e.Prepare(context.Background(), req, history, engine.Inputs{})
		if err != nil {
			t.Fatal(err)
		}
		return runHosted(t, j, context.Background()), rt.Prompts()
	}

	k := &echoKind{}
	r, prompts := run(k, turnModel(hermes(`{"name":"shout","arguments":{"m":"hi"}}`), []string{"Done."}),
		`{"model":"m","input":"hi","tools":[{"type":"echo"}]}`, nil)
	if got, want := hostedSummary(r), `completed: mcp[completed] shout {"m":"hi"} -> "HI" err "" | message Done.`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(k.calls) != 1 || k.plans != 2 {
		t.Errorf("calls %q in %d planned turns, want one call in two", k.calls, k.plans)
	}
	if len(prompts) < 2 || !strings.Contains(prompts[0], `"name":"shout"`) || !strings.Contains(prompts[len(prompts)-1], "HI") {
		t.Errorf("prompts: the first offers shout, the last reads its result:\n%q", prompts)
	}

	// A function of the request named shout: the kind offers echo__shout.
	k = &echoKind{}
	r, _ = run(k, turnModel(hermes(`{"name":"echo__shout","arguments":{"m":"yo"}}`), []string{"Done."}),
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"shout","parameters":{"type":"object"}},{"type":"echo"}]}`, nil)
	if got, want := hostedSummary(r), `completed: mcp[completed] shout {"m":"yo"} -> "YO" err "" | message Done.`; got != want {
		t.Errorf("a taken name:\n got  %s\nwant %s", got, want)
	}

	// The chain's items, the kind's tool no longer offered: no plan, the items
	// read as calls and results.
	k = &echoKind{}
	_, prompts = run(k, turnModel([]string{"Fine."}, []string{"Fine."}), `{"model":"m","input":"again"}`, r.Output)
	if k.plans != 0 || !strings.Contains(prompts[0], "YO") {
		t.Errorf("replayed chain: %d plans, prompt %q", k.plans, prompts[0])
	}

	// No kind registered: a tool the decoder ignores stays ignored (the model is
	// not offered shout); one hearth runs (mcp) is a 400 naming it.
	_, prompts = run(nil, turnModel([]string{"Fine."}, []string{"Fine."}), `{"model":"m","input":"hi","tools":[{"type":"echo"}]}`, nil)
	if strings.Contains(prompts[0], "shout") {
		t.Errorf("an unregistered kind's tool was offered: %q", prompts[0])
	}
	req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":"hi","tools":[{"type":"echo"},{"type":"mcp","server_label":"srv"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.New(engine.NewFakeRuntime(nil), engine.DefaultFormats(), nil).Prepare(context.Background(), req, nil, engine.Inputs{})
	var herr *hearth.Error
	if !errors.As(err, &herr) || herr.Param != "tools[1].type" {
		t.Errorf("an mcp tool with no kind registered: %v, want a 400 naming tools[1].type", err)
	}
}
