package mcp

import (
	"fmt"
	"strings"

	"hearth"
	"hearth/engine"
)

// ToolRefused refuses the mcp tool of a server the operator limited to other keys.
func (k *Kind) ToolRefused(key string, t *hearth.Tool) (field, subject string, refused bool) {
	if k.servers == nil || ToolOf(t) == nil || k.servers.KeyAllowed(ToolOf(t).ServerLabel, key) {
		return "", "", false
	}
	return "server_label", fmt.Sprintf("The MCP server '%s'", ToolOf(t).ServerLabel), true
}

// ItemRefused refuses an mcp_list_tools, mcp_call or mcp_approval_request item that
// names a server the operator limited to other keys: as the same server in tools is,
// so a key learns nothing from items it could not learn from tools, and no item makes
// hearth act for a server the key may not use. A label no server has passes here, as
// in tools, and is Plan's to refuse where it would run anything.
func (k *Kind) ItemRefused(key string, it *hearth.Item) (field, subject string, refused bool) {
	switch it.Type {
	case ItemMCPListTools, ItemMCPCall, ItemMCPApprovalRequest:
	default:
		return "", "", false
	}
	if k.servers == nil || k.servers.KeyAllowed(Of(*it).ServerLabel, key) {
		return "", "", false
	}
	return "server_label", fmt.Sprintf("The MCP server '%s'", Of(*it).ServerLabel), true
}

// Reemit reports a stored MCP item as the live stream did: a listing whole, with its
// completed or failed event; a call with its arguments and result events.
func (k *Kind) Reemit(b *hearth.Builder, it hearth.Item) {
	if it.Type == ItemMCPListTools {
		AddListTools(b, it)
		return
	}
	// The stored ids, not new ones: a client that resumes from a replay answers
	// the approval requests by id.
	if startFrom(b, it) != nil {
		return
	}
	switch it.Type {
	case ItemMCPApprovalRequest:
		b.ArgumentsDelta(it.Arguments)
	case ItemMCPCall:
		b.ArgumentsDelta(it.Arguments)
		if it.Status != hearth.StatusIncomplete {
			EndCallAs(b, it.Output.Text, Of(it).Error, it.Status)
			return
		}
	}
	status := it.Status
	if status != hearth.StatusIncomplete {
		status = hearth.StatusCompleted
	}
	b.EndItem(status)
}

// View is how the console shows an MCP item.
func (k *Kind) View(it hearth.Item) engine.HostedView {
	var v engine.HostedView
	switch it.Type {
	case ItemMCPCall:
		// A hosted call and its result in one item: the server's tool, its
		// arguments, then what it answered or the error.
		v = engine.HostedView{Name: Of(it).ServerLabel + "." + it.Name, Args: it.Arguments, Text: it.Output.Text}
		if Of(it).Error != "" {
			v.Text = "error: " + Of(it).Error
		}
	case ItemMCPListTools:
		v.Name = Of(it).ServerLabel
		names := make([]string, len(Of(it).MCPTools))
		for i, t := range Of(it).MCPTools {
			names[i] = t.Name
		}
		v.Text = fmt.Sprintf("%d tools: %s", len(names), strings.Join(names, ", "))
		if Of(it).Error != "" {
			v.Text = "error: " + Of(it).Error
		}
	case ItemMCPApprovalRequest:
		v = engine.HostedView{Name: Of(it).ServerLabel + "." + it.Name, Args: it.Arguments, Text: "waiting for approval (" + it.ID + ")"}
	case ItemMCPApprovalResponse:
		v.Text = "denied"
		if Of(it).Approve != nil && *Of(it).Approve {
			v.Text = "approved"
		}
		v.Text += " (" + Of(it).ApprovalRequestID + ")"
		if Of(it).Reason != "" {
			v.Text += ": " + Of(it).Reason
		}
	}
	return v
}
