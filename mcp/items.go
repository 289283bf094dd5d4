package mcp

import (
	"fmt"
	"strings"

	"hearth"
	"hearth/engine"
)

// ToolRefused refuses the mcp tool of a server the operator limited to other keys.
func (k *Kind) ToolRefused(key string, t *hearth.Tool) (field, subject string, refused bool) {
	if k.servers == nil || t.MCP == nil || k.servers.KeyAllowed(t.MCP.ServerLabel, key) {
		return "", "", false
	}
	return "server_label", fmt.Sprintf("The MCP server '%s'", t.MCP.ServerLabel), true
}

// ItemRefused refuses an mcp_list_tools, mcp_call or mcp_approval_request item that
// names a server the operator limited to other keys: as the same server in tools is,
// so a key learns nothing from items it could not learn from tools, and no item makes
// hearth act for a server the key may not use. A label no server has passes here, as
// in tools, and is Plan's to refuse where it would run anything.
func (k *Kind) ItemRefused(key string, it *hearth.Item) (field, subject string, refused bool) {
	switch it.Type {
	case hearth.ItemMCPListTools, hearth.ItemMCPCall, hearth.ItemMCPApprovalRequest:
	default:
		return "", "", false
	}
	if k.servers == nil || k.servers.KeyAllowed(it.ServerLabel, key) {
		return "", "", false
	}
	return "server_label", fmt.Sprintf("The MCP server '%s'", it.ServerLabel), true
}

// Reemit reports a stored MCP item as the live stream did: a listing whole, with its
// completed or failed event; a call with its arguments and result events.
func (k *Kind) Reemit(b *hearth.Builder, it hearth.Item) {
	if it.Type == hearth.ItemMCPListTools {
		b.AddMCPListTools(it)
		return
	}
	// The stored ids, not new ones: a client that resumes from a replay answers
	// the approval requests by id.
	if b.StartItemFrom(it) != nil {
		return
	}
	switch it.Type {
	case hearth.ItemMCPApprovalRequest:
		b.ArgumentsDelta(it.Arguments)
	case hearth.ItemMCPCall:
		b.ArgumentsDelta(it.Arguments)
		if it.Status != hearth.StatusIncomplete {
			b.EndMCPCallAs(it.Output.Text, it.Error, it.Status)
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
	case hearth.ItemMCPCall:
		// A hosted call and its result in one item: the server's tool, its
		// arguments, then what it answered or the error.
		v = engine.HostedView{Name: it.ServerLabel + "." + it.Name, Args: it.Arguments, Text: it.Output.Text}
		if it.Error != "" {
			v.Text = "error: " + it.Error
		}
	case hearth.ItemMCPListTools:
		v.Name = it.ServerLabel
		names := make([]string, len(it.MCPTools))
		for i, t := range it.MCPTools {
			names[i] = t.Name
		}
		v.Text = fmt.Sprintf("%d tools: %s", len(names), strings.Join(names, ", "))
		if it.Error != "" {
			v.Text = "error: " + it.Error
		}
	case hearth.ItemMCPApprovalRequest:
		v = engine.HostedView{Name: it.ServerLabel + "." + it.Name, Args: it.Arguments, Text: "waiting for approval (" + it.ID + ")"}
	case hearth.ItemMCPApprovalResponse:
		v.Text = "denied"
		if it.Approve != nil && *it.Approve {
			v.Text = "approved"
		}
		v.Text += " (" + it.ApprovalRequestID + ")"
		if it.Reason != "" {
			v.Text += ": " + it.Reason
		}
	}
	return v
}
