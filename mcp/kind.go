package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"hearth"
	"hearth/engine"
	"hearth/internal/seal"
)

// Servers runs the tools of MCP servers: the Manager over the MCP SDK, a fake in
// tests of the kind. A request names a server by the label the operator configured,
// or by a URL the operator allows.
type Servers interface {
	// ListTools lists the server's tools. An unknown label is ErrUnknownServer, a URL
	// the operator does not allow ErrServerRefused (both wrapped, with the reason);
	// any other error is the server's failure.
	ListTools(ctx context.Context, s Ref) ([]Tool, error)
	// CallTool runs one tool with arguments (a JSON object). A tool that reports an
	// error is a result with IsError; err is a call that failed (the server is down,
	// the time limit passed, ctx was cancelled).
	CallTool(ctx context.Context, s Ref, name string, arguments json.RawMessage) (Result, error)
	// KeyAllowed reports whether the API key named key may use the server label.
	KeyAllowed(label, key string) bool
}

// Ref names the server a request's mcp tool uses.
type Ref struct {
	Label   string
	URL     string
	Headers map[string]string
}

// Tool is one tool a server lists.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON schema of the tool's arguments.
	InputSchema json.RawMessage
	Annotations json.RawMessage
}

// Result is what a tool returned: its output as text (already capped by the
// implementation) and whether the tool said it failed.
type Result struct {
	Output  string
	IsError bool
}

// Errors of Servers.ListTools that are the request's fault (400).
var (
	ErrUnknownServer = errors.New("no MCP server is configured with this label")
	ErrServerRefused = errors.New("the operator does not allow this MCP server URL")
)

// Kind is MCP as a hosted tool kind of the engine: a request's {"type": "mcp"} tools
// are the tools of the servers they name, offered to the model as functions; hearth
// runs the calls (after the client's approval where require_approval asks for it) as
// mcp_call items, and reports each server's listing as an mcp_list_tools item.
type Kind struct {
	servers Servers
	log     *slog.Logger
}

// NewKind returns the MCP kind over servers; nil servers (none configured) makes a
// request with mcp tools a 400 that says so.
func NewKind(servers Servers, log *slog.Logger) *Kind {
	return &Kind{servers: servers, log: cmp.Or(log, slog.Default())}
}

var (
	_ engine.HostedKind      = (*Kind)(nil)
	_ engine.HostedAccess    = (*Kind)(nil)
	_ engine.HostedReemitter = (*Kind)(nil)
	_ engine.HostedViewer    = (*Kind)(nil)
)

// ToolType is "mcp".
func (k *Kind) ToolType() string { return ToolMCP }

// Owns reports whether itemType is an MCP item type.
func (k *Kind) Owns(itemType string) bool { return isMCPItem(itemType) }

func isMCPItem(itemType string) bool {
	switch itemType {
	case ItemMCPListTools, ItemMCPCall, ItemMCPApprovalRequest, ItemMCPApprovalResponse:
		return true
	}
	return false
}

// ref is one server tool as the model knows it.
type ref struct {
	server Ref
	name   string
	// approval: a call needs the client's approval before it runs.
	approval bool
}

// plan is one turn's MCP tools: the servers' tools, the listings the turn still has
// to report and the calls the client approved.
type plan struct {
	servers Servers
	log     *slog.Logger
	seal    *seal.Key
	caller  string
	tools   []hearth.Tool
	choice  *hearth.ToolChoice
	// byModelName maps the function name the model sees to the server's tool.
	byModelName map[string]ref
	modelNames  map[[2]string]string // {label, tool} -> model name
	// listings are mcp_list_tools items this turn reports before generating.
	listings []hearth.Item
	// approved are the calls the client approved, run before generating.
	approved []approvedCall
}

func newPlan() *plan {
	return &plan{byModelName: map[string]ref{}, modelNames: map[[2]string]string{}}
}

// Plan lists each server's tools (or reuses a listing of the chain), offers one
// function per server tool, puts tool_choice in those terms, and finds the calls the
// client approved.
func (k *Kind) Plan(ctx context.Context, r *engine.HostedRequest) (engine.HostedPlan, error) {
	req, history, input := r.Request, r.History, r.Input
	if k.servers == nil {
		p := fmt.Sprintf("tools[%d].server_label", r.Tools[0])
		return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
			fmt.Sprintf("Invalid '%s': this hearth has no MCP servers configured (--mcp or [mcp.LABEL] in the config file).", p))
	}
	st := newPlan()
	st.servers, st.log, st.seal, st.caller = k.servers, k.log, r.Seal, r.Caller
	type listed struct {
		i     int
		tools []MCPToolInfo
	}
	var lists []listed
	count := map[string]int{}
	for _, i := range r.Tools {
		m := ToolOf(&req.Tools[i])
		srv := Ref{Label: m.ServerLabel, URL: m.ServerURL, Headers: m.Headers}
		tools, reused := reusedListing(m.ServerLabel, history, input)
		for _, name := range m.AllowedTools {
			if reused && !r.LaterTurn && !slices.ContainsFunc(tools, func(t MCPToolInfo) bool { return t.Name == name }) {
				// The chain's listing was made for fewer tools than this request
				// allows: list again.
				reused = false
			}
		}
		if !reused {
			got, err := k.servers.ListTools(ctx, srv)
			switch {
			case errors.Is(err, ErrUnknownServer):
				p := fmt.Sprintf("tools[%d].server_label", i)
				return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': %v.", p, err))
			case errors.Is(err, ErrServerRefused):
				p := fmt.Sprintf("tools[%d].server_url", i)
				return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': %v.", p, err))
			}
			listing := &Fields{ServerLabel: m.ServerLabel, MCPTools: []MCPToolInfo{}}
			item := hearth.Item{Type: ItemMCPListTools, ID: hearth.NewID(PrefixMCPListTools), Hosted: listing}
			if err != nil {
				// The server is down or failed: the response reports it and goes on
				// without its tools.
				k.log.Warn("mcp list tools failed", "server", m.ServerLabel, "error", err)
				listing.Error = err.Error()
			}
			for _, t := range got {
				info := MCPToolInfo{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations}
				if !m.Allows(info) {
					// The listing shows what this request offers, as OpenAI's does.
					continue
				}
				listing.MCPTools = append(listing.MCPTools, info)
			}
			st.listings = append(st.listings, item)
			tools = listing.MCPTools
		}
		if m.AllowedTools != nil || m.AllowedReadOnly {
			tools = slices.DeleteFunc(slices.Clone(tools), func(t MCPToolInfo) bool { return !m.Allows(t) })
		}
		for _, t := range tools {
			count[t.Name]++
		}
		lists = append(lists, listed{i, tools})
	}

	// A server tool whose name the request's own tools take, or another server's
	// tool has too, is shown to the model as <label>__<name>.
	for _, l := range lists {
		m := ToolOf(&req.Tools[l.i])
		srv := Ref{Label: m.ServerLabel, URL: m.ServerURL, Headers: m.Headers}
		for _, t := range l.tools {
			name := t.Name
			if r.Taken(name) || count[name] > 1 || !validFunctionName(name) {
				name = m.ServerLabel + "__" + sanitizeName(t.Name)
			}
			if _, dup := st.byModelName[name]; dup || r.Taken(name) {
				continue // two tools of one server that sanitize alike: the first wins
			}
			params := t.InputSchema
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			st.byModelName[name] = ref{server: srv, name: t.Name, approval: m.Approval.Required(t)}
			st.modelNames[[2]string{m.ServerLabel, t.Name}] = name
			st.tools = append(st.tools, hearth.Tool{Type: hearth.ToolFunction, Name: name, Description: t.Description, Parameters: params,
				Strict: k.strict(r, m.ServerLabel, name, params)})
		}
	}
	if c := req.ToolChoice; c.Type == ToolMCP {
		var names []hearth.ToolRef
		for model, ref := range st.byModelName {
			if ref.server.Label == ChoiceLabel(c) && (c.Name == "" || ref.name == c.Name) {
				names = append(names, hearth.ToolRef{Type: hearth.ToolFunction, Name: model})
			}
		}
		if len(names) == 0 {
			return nil, hearth.InvalidRequest("tool_choice.name", hearth.CodeInvalidValue,
				fmt.Sprintf("Tool choice 'mcp' names tool '%s' of server '%s', which the server does not offer.", c.Name, ChoiceLabel(c)))
		}
		slices.SortFunc(names, func(a, b hearth.ToolRef) int { return strings.Compare(a.Name, b.Name) })
		if len(names) == 1 {
			st.choice = &hearth.ToolChoice{Type: hearth.ToolFunction, Name: names[0].Name}
		} else {
			st.choice = &hearth.ToolChoice{Type: "allowed_tools", Mode: hearth.ToolChoiceRequired, Allowed: names}
		}
	}
	approvals, err := st.answeredApprovals(history, input, func(it hearth.Item) bool { return approvalIssued(r.Seal, r.Caller, it) })
	if err != nil {
		return nil, err
	}
	st.approved = approvals
	return st, nil
}

// strict makes a server's tool strict when the runtime can turn its schema into a
// grammar: hearth runs the call itself, so its arguments are generated under the
// schema and validated before they reach the server, never passed on malformed. A
// schema the grammar cannot express is offered as a plain function (and the call is
// the server's to refuse).
func (k *Kind) strict(r *engine.HostedRequest, label, name string, params json.RawMessage) *bool {
	err := r.Grammar(name, params)
	if err != nil {
		k.log.Info("mcp tool offered without a grammar", "server", label, "tool", name, "reason", err)
	}
	strict := err == nil
	return &strict
}

// AsCalls renders MCP items in function-call terms with the tools' own names (a
// request that no longer offers the servers' tools, compaction).
func (k *Kind) AsCalls(items, other []hearth.Item) []hearth.Item {
	return newPlan().AsCalls(items, other)
}

func (st *plan) Tools() []hearth.Tool           { return st.tools }
func (st *plan) ToolChoice() *hearth.ToolChoice { return st.choice }

// Attach gives each mcp_approval_request hearth issues its proof in its id, when
// the engine has a key.
func (st *plan) Attach(b *hearth.Builder) {
	if st.seal != nil {
		key, caller := st.seal, st.caller
		SetApprovalID(b, func(it hearth.Item) string { return approvalID(key, caller, it) })
	}
}

// Call returns the server tool the model calls by name.
func (st *plan) Call(name string) (engine.HostedCall, bool) {
	r, ok := st.byModelName[name]
	if !ok {
		return nil, false
	}
	return &toolCall{st: st, ref: r}, true
}

// toolCall is one call the model makes of a server's tool: an mcp_call, or an
// mcp_approval_request when the tool needs the client's approval first.
type toolCall struct {
	st  *plan
	ref ref
}

func (c *toolCall) Begin(b *hearth.Builder) error {
	if c.ref.approval {
		return StartApprovalRequest(b, c.ref.server.Label, c.ref.name)
	}
	return StartCall(b, c.ref.server.Label, c.ref.name, "")
}

func (c *toolCall) End(ctx context.Context, b *hearth.Builder, arguments string) (bool, error) {
	if c.ref.approval {
		return false, b.EndItem(hearth.StatusCompleted)
	}
	return true, c.st.run(ctx, b, c.ref, arguments)
}

func validFunctionName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	return sanitizeName(s) == s
}

// sanitizeName makes s a function name the API accepts (^[a-zA-Z0-9_-]+$).
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// reusedListing returns the tools of the chain's last successful listing of label:
// a continuation offers the tools the conversation already knows, as OpenAI does,
// rather than listing them again.
func reusedListing(label string, lists ...[]hearth.Item) ([]MCPToolInfo, bool) {
	var tools []MCPToolInfo
	found := false
	for _, items := range lists {
		for _, it := range items {
			if it.Type == ItemMCPListTools && Of(it).ServerLabel == label && Of(it).Error == "" {
				tools, found = Of(it).MCPTools, true
			}
		}
	}
	return tools, found
}

func hasMCPItems(items []hearth.Item) bool {
	for i := range items {
		if isMCPItem(items[i].Type) {
			return true
		}
	}
	return false
}

// modelName is the function name the model knows a server's tool by: the one this
// response offers, else the tool's own name (a call of an earlier turn).
func (st *plan) modelName(label, tool string) string {
	if n, ok := st.modelNames[[2]string{label, tool}]; ok {
		return n
	}
	return tool
}

// AsCalls renders MCP items in function-call terms, the shape every template knows:
// an mcp_call is a call and its result; a denied approval request a call and the
// denial; listings, pending requests and the answers to them are not shown.
//
// other is the rest of the conversation (history for input, input for history): an
// answer to a request may be in either.
func (st *plan) AsCalls(items, other []hearth.Item) []hearth.Item {
	if !hasMCPItems(items) {
		return items
	}
	denied := map[string]string{}
	for _, list := range [][]hearth.Item{items, other} {
		for _, it := range list {
			if it.Type == ItemMCPApprovalResponse && Of(it).Approve != nil && !*Of(it).Approve {
				denied[Of(it).ApprovalRequestID] = Of(it).Reason
			}
		}
	}
	out := make([]hearth.Item, 0, len(items))
	for _, it := range items {
		switch it.Type {
		case ItemMCPListTools, ItemMCPApprovalResponse:
		case ItemMCPCall:
			result := it.Output.Text
			if Of(it).Error != "" {
				result = "Error: " + Of(it).Error
			}
			out = append(out, hearth.AsCall(it.ID, st.modelName(Of(it).ServerLabel, it.Name), it.Arguments, result)...)
		case ItemMCPApprovalRequest:
			reason, ok := denied[it.ID]
			if !ok {
				continue
			}
			result := "The user denied this call."
			if reason != "" {
				result += " Reason: " + reason
			}
			out = append(out, hearth.AsCall(it.ID, st.modelName(Of(it).ServerLabel, it.Name), it.Arguments, result)...)
		default:
			out = append(out, it)
		}
	}
	return out
}

// approvedCall is a call the client approved: the request hearth issued, and the tool
// of this request's tools it runs.
type approvedCall struct {
	req hearth.Item
	ref ref
}

// answeredApprovals returns the calls the request's input approves, and checks every
// answer names a request of the conversation that no call ran yet. An approved request
// runs only when hearth issued it to this caller, as it stands (issued: its id's
// proof, sealed.go), and only through the tools of this request: its server and tool
// must be an mcp tool the request offers, with that tool's server (URL, headers) and
// after its allowed_tools, never a server the item alone names. A request of the
// input that fails its proof is named (input[k]); one of the stored conversation by
// the answer that approves it.
func (st *plan) answeredApprovals(history, input []hearth.Item, issued func(hearth.Item) bool) ([]approvedCall, error) {
	type found struct {
		it hearth.Item
		at int // its index in input, -1 in history
	}
	requests := map[string]found{}
	ran := map[string]bool{}
	for n, items := range [][]hearth.Item{history, input} {
		for k, it := range items {
			switch it.Type {
			case ItemMCPApprovalRequest:
				at := -1
				if n == 1 {
					at = k
				}
				requests[it.ID] = found{it, at}
			case ItemMCPCall:
				if Of(it).ApprovalRequestID != "" {
					ran[Of(it).ApprovalRequestID] = true
				}
			}
		}
	}
	var approved []approvedCall
	for i, it := range input {
		if it.Type != ItemMCPApprovalResponse {
			continue
		}
		p := fmt.Sprintf("input[%d].approval_request_id", i)
		f, ok := requests[Of(it).ApprovalRequestID]
		if !ok {
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
				fmt.Sprintf("No mcp_approval_request found with id %s.", Of(it).ApprovalRequestID))
		}
		if ran[Of(it).ApprovalRequestID] {
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
				fmt.Sprintf("The mcp_approval_request %s was answered already.", Of(it).ApprovalRequestID))
		}
		if !*Of(it).Approve {
			// A denial runs nothing: the model reads that the user said no.
			continue
		}
		// Answered now: a second approval of it in the same input is answered too.
		ran[Of(it).ApprovalRequestID] = true
		req := f.it
		if !issued(req) {
			what := fmt.Sprintf("Invalid '%s': the mcp_approval_request %s", p, req.ID)
			if f.at >= 0 {
				p = fmt.Sprintf("input[%d]", f.at)
				what = fmt.Sprintf("Invalid '%s': this mcp_approval_request", p)
			}
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, what+
				" was not issued by hearth to this API key, or was changed since: an approval runs only a call hearth asked"+
				" this key to approve, sent back with its id, server_label, name and arguments exactly as hearth gave them.")
		}
		ref, ok := st.byModelName[st.modelName(Of(req).ServerLabel, req.Name)]
		if !ok || ref.server.Label != Of(req).ServerLabel || ref.name != req.Name {
			p = fmt.Sprintf("input[%d]", i)
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf(
				"Invalid '%s': the approved call is of tool '%s' of MCP server '%s', which this request's tools do not offer;"+
					" approve it with the mcp tool that asked for it in tools.", p, req.Name, Of(req).ServerLabel))
		}
		approved = append(approved, approvedCall{req, ref})
	}
	return approved, nil
}

// run runs one call whose mcp_call item is open in b, and ends the item with the
// tool's output or error. A failed call is the model's to read, not the end of the
// response; only the client's leaving (ctx) ends it.
func (st *plan) run(ctx context.Context, b *hearth.Builder, r ref, arguments string) error {
	if err := ArgumentsDone(b); err != nil {
		return err
	}
	args := json.RawMessage(arguments)
	if strings.TrimSpace(arguments) == "" {
		args = json.RawMessage("{}")
	}
	res, err := st.servers.CallTool(ctx, r.server, r.name, args)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case err != nil:
		st.log.Warn("mcp call failed", "server", r.server.Label, "tool", r.name, "error", err)
		return EndCall(b, "", err.Error())
	case res.IsError:
		st.log.Info("mcp tool reported an error", "server", r.server.Label, "tool", r.name)
		return EndCall(b, "", res.Output)
	}
	st.log.Info("mcp call", "server", r.server.Label, "tool", r.name)
	return EndCall(b, res.Output, "")
}

// Start reports the servers' listings, then runs the calls the client approved.
func (st *plan) Start(ctx context.Context, b *hearth.Builder) (int, error) {
	for _, it := range st.listings {
		if err := AddListTools(b, it); err != nil {
			return 0, err
		}
	}
	ran := 0
	for _, a := range st.approved {
		if err := StartCall(b, Of(a.req).ServerLabel, a.req.Name, a.req.ID); err != nil {
			return ran, err
		}
		if err := b.ArgumentsDelta(a.req.Arguments); err != nil {
			return ran, err
		}
		ran++
		if err := st.run(ctx, b, a.ref, a.req.Arguments); err != nil {
			return ran, err
		}
	}
	return ran, nil
}
