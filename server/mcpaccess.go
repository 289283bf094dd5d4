package server

import (
	"fmt"
	"net/http"

	"hearth"
)

// checkMCPItems refuses a response whose conversation names an MCP server the
// operator limited to other keys: not only the mcp tools of the request
// (checkMCPAccess) but every mcp_list_tools, mcp_call and mcp_approval_request item
// it carries, in its input (item references resolved), in the chain behind
// previous_response_id and in its conversation. An item naming such a server is
// refused as the same server in tools is, a 403 that says no more than tools' does
// (a label no server has passes here, as in tools, and is the engine's to refuse
// where it would run anything), so a key learns nothing from items it could not
// learn from tools, and no item makes hearth act for a server the key may not use.
func (s *Server) checkMCPItems(key string, chain, conversation, input []hearth.Item) error {
	if s.mcpKeyAllowed == nil {
		return nil
	}
	for _, part := range []struct {
		items []hearth.Item
		param func(i int) (param, where string)
	}{
		{input, func(i int) (string, string) {
			p := fmt.Sprintf("input[%d].server_label", i)
			return p, "'" + p + "'"
		}},
		{chain, func(i int) (string, string) {
			return "previous_response_id", fmt.Sprintf("item %d of the previous response chain", i)
		}},
		{conversation, func(i int) (string, string) {
			return "conversation", fmt.Sprintf("item %d of the conversation", i)
		}},
	} {
		for i := range part.items {
			it := &part.items[i] // an Item is large: no copy per item of a long chain
			switch it.Type {
			case hearth.ItemMCPListTools, hearth.ItemMCPCall, hearth.ItemMCPApprovalRequest:
			default:
				continue
			}
			if s.mcpKeyAllowed(it.ServerLabel, key) {
				continue
			}
			p, where := part.param(i)
			return &hearth.Error{Status: http.StatusForbidden, Type: hearth.ErrTypeInvalidRequest, Code: "permission_denied", Param: p,
				Message: fmt.Sprintf("The MCP server '%s' named by %s is not available to this API key.", it.ServerLabel, where)}
		}
	}
	return nil
}
