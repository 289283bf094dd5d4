package mcp

import (
	"strings"
	"testing"

	"hearth"
	"hearth/internal/seal"
)

// TestApprovalIDBinding: the id's proof fails for any change of what it binds, and an
// id of the wrong shape is refused without a panic.
func TestApprovalIDBinding(t *testing.T) {
	key := seal.NewKey()
	it := hearth.Item{Type: ItemMCPApprovalRequest, Hosted: &Fields{ServerLabel: "srv"}, Name: "echo", Arguments: `{"m":"hi"}`}
	it.ID = approvalID(key, "alice", it)
	if !approvalIssued(key, "alice", it) {
		t.Fatal("the id does not prove its own request")
	}
	if again := approvalID(key, "alice", it); again == it.ID {
		t.Error("two requests of the same call share an id: the nonce is not random")
	}
	for _, id := range []string{"", "mcpr_", "mcpr_zz", it.ID[:len(it.ID)-1], it.ID + "0", "mcp_" + it.ID[5:],
		"mcpr_" + strings.Repeat("g", 64), strings.ToUpper(it.ID)} {
		bad := it
		bad.ID = id
		if approvalIssued(key, "alice", bad) {
			t.Errorf("id %q proves the request", id)
		}
	}
	for name, changed := range map[string]func(*hearth.Item){
		"caller":    nil,
		"server":    func(it *hearth.Item) { it.Hosted = &Fields{ServerLabel: "other"} },
		"tool":      func(it *hearth.Item) { it.Name = "boom" },
		"arguments": func(it *hearth.Item) { it.Arguments = `{"m":"rm -rf"}` },
	} {
		bad, caller := it, "alice"
		if changed == nil {
			caller = "bob"
		} else {
			changed(&bad)
		}
		if approvalIssued(key, caller, bad) {
			t.Errorf("the id proves the request with its %s changed", name)
		}
	}
	if approvalIssued(nil, "alice", it) {
		t.Error("an engine without a key recognises a request")
	}
	if approvalIssued(seal.NewKey(), "alice", it) {
		t.Error("another key recognises the request")
	}
}
