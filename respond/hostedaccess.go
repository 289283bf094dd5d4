package respond

import (
	"fmt"
	"net/http"
	"slices"

	"hearth"
	"hearth/engine"
)

// hostedAccess are the hosted tool kinds whose tools the operator may limit to some
// API keys (engine.HostedAccess).
func (s *Service) hostedAccess() []engine.HostedAccess {
	if s.engine == nil {
		return nil
	}
	var out []engine.HostedAccess
	for _, k := range s.engine.HostedKinds() {
		if a, ok := k.(engine.HostedAccess); ok {
			out = append(out, a)
		}
	}
	return out
}

// CheckAccess refuses the hosted tools (an MCP server's) the operator limited to
// other keys.
func (s *Service) CheckAccess(key string, req *hearth.CreateResponseRequest) error {
	if s.engine == nil {
		return nil
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		k, ok := s.engine.HostedKindFor(t.Type)
		if !ok {
			continue
		}
		a, ok := k.(engine.HostedAccess)
		if !ok {
			continue
		}
		field, subject, refused := a.ToolRefused(key, t)
		if !refused {
			continue
		}
		p := fmt.Sprintf("tools[%d].%s", i, field)
		return &hearth.Error{Status: http.StatusForbidden, Type: hearth.ErrTypeInvalidRequest, Code: "permission_denied", Param: p,
			Message: subject + " is not available to this API key."}
	}
	return nil
}

// checkHostedItems refuses a response whose conversation names what the operator
// limited to other keys (an MCP server): not only the hosted tools of the request
// (CheckAccess) but every item of those kinds it carries, in its input (item
// references resolved), in the chain behind previous_response_id and in its
// conversation. An item naming such a server is refused as the same server in tools
// is, a 403 that says no more than tools' does, so a key learns nothing from items it
// could not learn from tools, and no item makes hearth act for what the key may not
// use.
func (s *Service) checkHostedItems(key string, chain, conversation, input []hearth.Item) error {
	access := s.hostedAccess()
	if len(access) == 0 {
		return nil
	}
	for _, part := range []struct {
		items []hearth.Item
		param func(i int, field string) (param, where string)
	}{
		{input, func(i int, field string) (string, string) {
			p := fmt.Sprintf("input[%d].%s", i, field)
			return p, "'" + p + "'"
		}},
		{chain, func(i int, _ string) (string, string) {
			return "previous_response_id", fmt.Sprintf("item %d of the previous response chain", i)
		}},
		{conversation, func(i int, _ string) (string, string) {
			return "conversation", fmt.Sprintf("item %d of the conversation", i)
		}},
	} {
		for i := range part.items {
			it := &part.items[i] // an Item is large: no copy per item of a long chain
			for _, a := range access {
				// Each kind passes the items that are not its own.
				field, subject, refused := a.ItemRefused(key, it)
				if !refused {
					continue
				}
				p, where := part.param(i, field)
				return &hearth.Error{Status: http.StatusForbidden, Type: hearth.ErrTypeInvalidRequest, Code: "permission_denied", Param: p,
					Message: fmt.Sprintf("%s named by %s is not available to this API key.", subject, where)}
			}
		}
	}
	return nil
}

// HostedIgnored takes out of the decoder's ignored fields the hosted tools a kind is
// registered for: the decoder reports every tool whose running is configuration
// (web_search) as ignored, and the engine runs those this hearth has a kind for. A
// tool_choice that forces a hosted tool nothing here runs is refused: the model could
// never make that call.
func (s *Service) HostedIgnored(req *hearth.CreateResponseRequest, ignored []string) ([]string, error) {
	has := func(typ string) bool {
		if s.engine == nil {
			return false
		}
		_, ok := s.engine.HostedKindFor(typ)
		return ok
	}
	for i := range req.Tools {
		if t := &req.Tools[i]; t.Ignored() && has(t.Type) {
			ignored = slices.DeleteFunc(ignored, func(n string) bool { return n == fmt.Sprintf("tools[%d] (%s)", i, t.Type) })
		}
	}
	if c := req.ToolChoice; c.Type != "" && c.Type != "allowed_tools" && (&hearth.Tool{Type: c.Type}).Hosted() && !has(c.Type) {
		return nil, hearth.InvalidRequest("tool_choice", hearth.CodeInvalidValue, fmt.Sprintf(
			"Tool choice '%s' forces a hosted tool this hearth does not run (the operator configures them; see docs/configuration.md).", c.Type))
	}
	return ignored, nil
}
