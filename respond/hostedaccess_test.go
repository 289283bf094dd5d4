package respond

import (
	"errors"
	"net/http"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/mcp"
)

// keyServers are MCP servers of which secret is alice's alone.
type keyServers struct{ mcp.Servers }

func (keyServers) KeyAllowed(label, key string) bool { return label != "secret" || key == "alice" }

// withMCPKeys is a server whose engine has the MCP kind over servers.
func withMCPKeys(servers mcp.Servers) *Service {
	e := engine.New(nil, engine.DefaultFormats(), nil)
	e.RegisterHosted(mcp.NewKind(servers, nil))
	return &Service{engine: e}
}

// TestCheckHostedItems: an MCP item naming a server the key may not use is the 403 that
// server in tools is, naming where the item is; other items, servers the key may use
// and labels no server has pass.
func TestCheckHostedItems(t *testing.T) {
	s := withMCPKeys(keyServers{})
	item := func(typ, label string) hearth.Item {
		return hearth.Item{Type: typ, Hosted: &mcp.Fields{ServerLabel: label}}
	}
	msg := hearth.Item{Type: hearth.ItemMessage, Role: hearth.RoleUser}
	for _, tc := range []struct {
		name                       string
		key                        string
		chain, conversation, input []hearth.Item
		param                      string // "" passes
	}{
		{"an approval request in the input", "bob", nil, nil, []hearth.Item{msg, item(mcp.ItemMCPApprovalRequest, "secret")}, "input[1].server_label"},
		{"a call in the input", "bob", nil, nil, []hearth.Item{item(mcp.ItemMCPCall, "secret")}, "input[0].server_label"},
		{"a listing in the chain", "bob", []hearth.Item{msg, msg, item(mcp.ItemMCPListTools, "secret")}, nil, nil, "previous_response_id"},
		{"a call in the conversation", "bob", nil, []hearth.Item{item(mcp.ItemMCPCall, "secret")}, nil, "conversation"},
		{"the key may use it", "alice", []hearth.Item{item(mcp.ItemMCPCall, "secret")}, []hearth.Item{item(mcp.ItemMCPListTools, "secret")},
			[]hearth.Item{item(mcp.ItemMCPApprovalRequest, "secret")}, ""},
		{"an open server", "bob", nil, nil, []hearth.Item{item(mcp.ItemMCPApprovalRequest, "everything")}, ""},
		{"a label no server has", "bob", nil, nil, []hearth.Item{item(mcp.ItemMCPApprovalRequest, "nope")}, ""},
		// A response to a request names no server: the request it answers is checked
		// where it is.
		{"an approval response", "bob", nil, nil, []hearth.Item{{Type: mcp.ItemMCPApprovalResponse, Hosted: &mcp.Fields{ApprovalRequestID: "mcpr_1"}}}, ""},
		{"other items with a label", "bob", nil, nil, []hearth.Item{{Type: hearth.ItemFunctionCall, Name: "f", Hosted: &mcp.Fields{ServerLabel: "secret"}}}, ""},
	} {
		err := s.checkHostedItems(tc.key, tc.chain, tc.conversation, tc.input)
		if tc.param == "" {
			if err != nil {
				t.Errorf("%s: %v, want it to pass", tc.name, err)
			}
			continue
		}
		var e *hearth.Error
		if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != "permission_denied" || e.Param != tc.param {
			t.Errorf("%s: %v, want a 403 naming %s", tc.name, err, tc.param)
		}
	}
	if err := (&Service{}).checkHostedItems("bob", nil, nil, []hearth.Item{item(mcp.ItemMCPCall, "secret")}); err != nil {
		t.Errorf("no MCP servers: %v", err)
	}
}

// BenchmarkCheckHostedItems: the check runs on every request, over the whole chain.
func BenchmarkCheckHostedItems(b *testing.B) {
	s := withMCPKeys(keyServers{})
	chain := make([]hearth.Item, 1000)
	for i := range chain {
		chain[i].Type = []string{hearth.ItemMessage, hearth.ItemReasoning, hearth.ItemFunctionCall, hearth.ItemFunctionCallOutput}[i%4]
	}
	for b.Loop() {
		s.checkHostedItems("key", chain, nil, nil)
	}
}
