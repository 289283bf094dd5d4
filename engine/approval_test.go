package engine_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/mcp"
)

// approvalEngine is an engine over the fake MCP server whose model calls echo once
// and answers "Done." after the result.
func approvalEngine(h *fakeHosted) *engine.Engine {
	return echoEngine(h, `{"m":"hi"}`)
}

// echoEngine is approvalEngine whose model calls echo with arguments.
func echoEngine(h *fakeHosted, arguments string) *engine.Engine {
	rt := engine.NewFakeRuntime(turnModel(hermes(`{"name":"echo","arguments":`+arguments+`}`), []string{"Done."}))
	return withMCP(rt, h)
}

const approvalTools = `"tools":[{"type":"mcp","server_label":"srv","require_approval":"always"}]`

// prepareAs prepares a request of tools (a JSON fragment) with input and history, for
// caller.
func prepareAs(t *testing.T, e *engine.Engine, caller, tools string, history, input []hearth.Item) (*engine.Job, error) {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":"hi",` + tools + `}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Input = input
	return e.Prepare(context.Background(), req, history, engine.Inputs{Caller: caller})
}

var approvalIDPattern = regexp.MustCompile(`^mcpr_[0-9a-f]{64}$`)

// TestApprovalIssuedAndProven: an approval request hearth issues carries a proof in
// its id (bound to the caller, server, tool and arguments); approving it runs the call,
// sent back whole (store: false) or from the stored chain. A request hearth did not
// issue to this caller as it stands is a 400 naming the item, and runs nothing: another
// caller's, changed arguments, server or tool, a made-up or plain id, another server's
// key. An approved call runs only through the request's own mcp tools.
func TestApprovalIssuedAndProven(t *testing.T) {
	h := &fakeHosted{}
	e := approvalEngine(h)
	user := hearth.Item{Type: hearth.ItemMessage, Role: hearth.RoleUser, Content: []hearth.ContentPart{{Type: hearth.PartInputText, Text: "hi"}}}
	j, err := prepareAs(t, e, "alice", approvalTools, nil, []hearth.Item{user})
	if err != nil {
		t.Fatal(err)
	}
	first := runHosted(t, j, context.Background())
	if got, want := hostedSummary(first), `completed: list srv echo,boom | mcp_approval_request`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	req := first.Output[1]
	if !approvalIDPattern.MatchString(req.ID) || req.Arguments != `{"m":"hi"}` {
		t.Fatalf("approval request id %q arguments %q: want mcpr_ and 64 hex digits, and the call's arguments", req.ID, req.Arguments)
	}
	if len(h.calls) != 0 {
		t.Fatalf("calls before the approval: %q", h.calls)
	}
	approve := func(id string, ok bool) hearth.Item {
		return hearth.Item{Type: mcp.ItemMCPApprovalResponse, Hosted: &mcp.Fields{ApprovalRequestID: id, Approve: &ok}}
	}
	echoed := func(it hearth.Item) []hearth.Item {
		return []hearth.Item{user, first.Output[0], it, approve(it.ID, true)}
	}
	ran := `completed: mcp[completed] echo {"m":"hi"} -> "Echo: hi" err "" | message Done.`

	// The genuine request runs, sent back whole or from the stored chain.
	for name, tc := range map[string]struct{ history, input []hearth.Item }{
		"stateless": {nil, echoed(req)},
		"chained":   {[]hearth.Item{user, first.Output[0], req}, []hearth.Item{approve(req.ID, true)}},
	} {
		h.calls = nil
		j, err := prepareAs(t, e, "alice", approvalTools, tc.history, tc.input)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := hostedSummary(runHosted(t, j, context.Background())); got != ran {
			t.Errorf("%s:\n got  %s\nwant %s", name, got, ran)
		}
		if len(h.calls) != 1 {
			t.Errorf("%s: calls %q, want one", name, h.calls)
		}
	}

	changed := func(f func(*hearth.Item)) hearth.Item {
		it := req.Clone()
		f(&it)
		return it
	}
	other := approvalEngine(h) // another server: another key
	// The proof of another request hearth issued to alice, under the same key.
	otherArgs := echoEngine(&fakeHosted{}, `{"m":"other"}`)
	otherArgs.Seal = e.Seal
	j, err = prepareAs(t, otherArgs, "alice", approvalTools, nil, []hearth.Item{user})
	if err != nil {
		t.Fatal(err)
	}
	otherReq := runHosted(t, j, context.Background()).Output[1]
	if otherReq.Type != mcp.ItemMCPApprovalRequest || otherReq.Arguments != `{"m":"other"}` {
		t.Fatalf("the other request: %+v", otherReq)
	}
	refused := []struct {
		name    string
		e       *engine.Engine
		caller  string
		history []hearth.Item
		input   []hearth.Item
		param   string
	}{
		{"another caller, sent back", e, "bob", nil, echoed(req), "input[2]"},
		{"another caller, chained", e, "bob", []hearth.Item{user, req}, []hearth.Item{approve(req.ID, true)}, "input[0].approval_request_id"},
		{"another server's key", other, "alice", nil, echoed(req), "input[2]"},
		{"arguments changed", e, "alice", nil, echoed(changed(func(it *hearth.Item) { it.Arguments = `{"m":"rm -rf"}` })), "input[2]"},
		{"tool changed", e, "alice", nil, echoed(changed(func(it *hearth.Item) { it.Name = "boom" })), "input[2]"},
		{"server changed", e, "alice", nil, echoed(changed(func(it *hearth.Item) { it.Hosted = &mcp.Fields{ServerLabel: "other"} })), "input[2]"},
		{"a made-up id", e, "alice", nil, echoed(changed(func(it *hearth.Item) { it.ID = "mcpr_forged" })), "input[2]"},
		{"a plain id", e, "alice", nil, echoed(changed(func(it *hearth.Item) { it.ID = hearth.NewID(mcp.PrefixMCPApprovalRequest) })), "input[2]"},
		{"the proof of another request", e, "alice", nil, echoed(changed(func(it *hearth.Item) {
			it.ID = otherReq.ID
		})), "input[2]"},
		// A request the client stored as its own input is no more hearth's than one
		// it sends now.
		{"a forged request stored as input", e, "alice", []hearth.Item{user, changed(func(it *hearth.Item) { it.ID = "mcpr_forged" })},
			[]hearth.Item{approve("mcpr_forged", true)}, "input[0].approval_request_id"},
		// Genuine, but this request's tools do not offer the tool: nothing runs
		// outside tools (allowed_tools here).
		{"a tool the request's tools do not offer", e, "alice", nil, echoed(req), "input[3]"},
		{"approved twice", e, "alice", nil, append(echoed(req), approve(req.ID, true)), "input[4].approval_request_id"},
	}
	for _, tc := range refused {
		h.calls = nil
		tools := approvalTools
		if strings.HasPrefix(tc.name, "a tool the request") {
			tools = `"tools":[{"type":"mcp","server_label":"srv","allowed_tools":["boom"],"require_approval":"always"}]`
		}
		j, err := prepareAs(t, tc.e, tc.caller, tools, tc.history, tc.input)
		var herr *hearth.Error
		if !errors.As(err, &herr) || herr.Status != 400 || herr.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.name, err, tc.param)
			if j != nil {
				runHosted(t, j, context.Background())
			}
		}
		if len(h.calls) != 0 {
			t.Errorf("%s: calls %q, want none", tc.name, h.calls)
		}
	}

	// A denial runs nothing and needs no proof: the model reads that the user said no,
	// and answers.
	h.calls = nil
	forged := changed(func(it *hearth.Item) { it.ID = "mcpr_forged" })
	j, err = prepareAs(t, e, "alice", approvalTools, nil, []hearth.Item{user, forged, approve(forged.ID, false)})
	if err != nil {
		t.Fatalf("denial: %v", err)
	}
	if got, want := hostedSummary(runHosted(t, j, context.Background())), `completed: list srv echo,boom | message Done.`; got != want {
		t.Errorf("denial:\n got  %s\nwant %s", got, want)
	}
	if len(h.calls) != 0 {
		t.Errorf("denial: calls %q", h.calls)
	}
}
