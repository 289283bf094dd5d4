package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"hearth"
	"hearth/toolgrammar"
)

// HostedTools runs tools on the model's behalf inside a response: the tools of MCP
// servers (package mcp implements it over the MCP SDK; the engine knows nothing of
// MCP's wire). A request names a server by the label the operator configured, or by
// a URL the operator allows.
type HostedTools interface {
	// ListTools lists the server's tools. An unknown label is ErrUnknownServer, a URL
	// the operator does not allow ErrServerRefused (both wrapped, with the reason);
	// any other error is the server's failure.
	ListTools(ctx context.Context, s HostedServer) ([]HostedTool, error)
	// CallTool runs one tool with arguments (a JSON object). A tool that reports an
	// error is a result with IsError; err is a call that failed (the server is down,
	// the time limit passed, ctx was cancelled).
	CallTool(ctx context.Context, s HostedServer, name string, arguments json.RawMessage) (HostedResult, error)
}

// HostedServer names the server a request's mcp tool uses.
type HostedServer struct {
	Label   string
	URL     string
	Headers map[string]string
}

// HostedTool is one tool a server lists.
type HostedTool struct {
	Name        string
	Description string
	// InputSchema is the JSON schema of the tool's arguments.
	InputSchema json.RawMessage
	Annotations json.RawMessage
}

// HostedResult is what a tool returned: its output as text (already capped by the
// implementation) and whether the tool said it failed.
type HostedResult struct {
	Output  string
	IsError bool
}

// Errors of HostedTools.ListTools that are the request's fault (400).
var (
	ErrUnknownServer = errors.New("no MCP server is configured with this label")
	ErrServerRefused = errors.New("the operator does not allow this MCP server URL")
)

// hostedRef is one hosted tool as the model knows it.
type hostedRef struct {
	server HostedServer
	name   string
	// approval: a call needs the client's approval before it runs.
	approval bool
}

// hostedState is what a response with mcp tools carries across its turns: the
// servers' tools, the listings it still has to report, and the counts of all turns.
type hostedState struct {
	h   HostedTools
	log *slog.Logger
	// byModelName maps the function name the model sees to the server's tool.
	byModelName map[string]hostedRef
	modelNames  map[[2]string]string // {label, tool} -> model name
	// listings are mcp_list_tools items this turn reports before generating.
	listings []hearth.Item
	// approved are the calls the client approved, run before generating.
	approved []approvedCall

	// calls counts the hosted calls of the response, all turns.
	calls int
	// turnCalls counts the hosted calls of the current turn: the model continues
	// after a turn that made some.
	turnCalls int
	// prior is the usage of the earlier turns.
	prior hearth.Usage
	// turnStart is the output index where the current turn's items begin.
	turnStart int
	// orig is the request as the client sent it, with its own input and the
	// history behind it, for the next turn's conversation.
	orig    *hearth.CreateResponseRequest
	history []hearth.Item
}

// planHosted resolves the request's mcp tools: it lists each server's tools (or
// reuses a listing of the chain), and returns a copy of req whose tools are the
// request's own plus one function per server tool, with tool_choice in those terms,
// and history and input with MCP items in function-call terms. A request with no
// mcp tools comes back unchanged, with a nil state.
func (e *Engine) planHosted(ctx context.Context, req *hearth.CreateResponseRequest, history, input []hearth.Item, plain int) (*hearth.CreateResponseRequest, []hearth.Item, []hearth.Item, *hostedState, error) {
	var servers []int
	for i, t := range req.Tools {
		if t.Type == hearth.ToolMCP && t.MCP != nil { // MCP is set by the decoder
			servers = append(servers, i)
		}
	}
	if len(servers) == 0 && !hasMCPItems(history[plain:]) && !hasMCPItems(input) {
		return req, history, input, nil, nil // history[:plain] is known to hold none
	}
	if len(servers) == 0 {
		// Earlier turns may have used MCP tools this request no longer offers: they
		// still render as the calls and results they were.
		history, input = mcpAsCalls(history, input)
		return req, history, input, nil, nil
	}
	if e.Hosted == nil {
		p := fmt.Sprintf("tools[%d].server_label", servers[0])
		return nil, nil, nil, nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
			fmt.Sprintf("Invalid '%s': this hearth has no MCP servers configured (--mcp or [mcp.LABEL] in the config file).", p))
	}
	st := &hostedState{h: e.Hosted, log: e.log, byModelName: map[string]hostedRef{}, modelNames: map[[2]string]string{},
		orig: req, history: history}

	// Names taken by the request's own tools: a server tool of the same name is
	// shown to the model as <label>__<name>.
	taken := map[string]bool{}
	for _, t := range req.Tools {
		switch t.Type {
		case hearth.ToolFunction, hearth.ToolCustom:
			taken[t.Name] = true
		case hearth.ToolNamespace:
			for _, c := range t.Tools {
				taken[c.Name] = true
			}
		}
	}
	type listed struct {
		i     int
		tools []hearth.MCPToolInfo
	}
	var lists []listed
	count := map[string]int{}
	for _, i := range servers {
		m := req.Tools[i].MCP
		srv := HostedServer{Label: m.ServerLabel, URL: m.ServerURL, Headers: m.Headers}
		tools, reused := reusedListing(m.ServerLabel, history, input)
		for _, name := range m.AllowedTools {
			if reused && !laterTurn(ctx) && !slices.ContainsFunc(tools, func(t hearth.MCPToolInfo) bool { return t.Name == name }) {
				// The chain's listing was made for fewer tools than this request
				// allows: list again.
				reused = false
			}
		}
		if !reused {
			got, err := e.Hosted.ListTools(ctx, srv)
			switch {
			case errors.Is(err, ErrUnknownServer):
				p := fmt.Sprintf("tools[%d].server_label", i)
				return nil, nil, nil, nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': %v.", p, err))
			case errors.Is(err, ErrServerRefused):
				p := fmt.Sprintf("tools[%d].server_url", i)
				return nil, nil, nil, nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': %v.", p, err))
			}
			item := hearth.Item{Type: hearth.ItemMCPListTools, ID: hearth.NewID(hearth.PrefixMCPListTools), ServerLabel: m.ServerLabel, MCPTools: []hearth.MCPToolInfo{}}
			if err != nil {
				// The server is down or failed: the response reports it and goes on
				// without its tools.
				e.log.Warn("mcp list tools failed", "server", m.ServerLabel, "error", err)
				item.Error = err.Error()
			}
			for _, t := range got {
				info := hearth.MCPToolInfo{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations}
				if !m.Allows(info) {
					// The listing shows what this request offers, as OpenAI's does.
					continue
				}
				item.MCPTools = append(item.MCPTools, info)
			}
			st.listings = append(st.listings, item)
			tools = item.MCPTools
		}
		if m.AllowedTools != nil || m.AllowedReadOnly {
			tools = slices.DeleteFunc(slices.Clone(tools), func(t hearth.MCPToolInfo) bool { return !m.Allows(t) })
		}
		for _, t := range tools {
			count[t.Name]++
		}
		lists = append(lists, listed{i, tools})
	}

	out := *req
	out.Tools = nil
	for _, t := range req.Tools {
		if t.Type != hearth.ToolMCP {
			out.Tools = append(out.Tools, t)
		}
	}
	for _, l := range lists {
		m := req.Tools[l.i].MCP
		srv := HostedServer{Label: m.ServerLabel, URL: m.ServerURL, Headers: m.Headers}
		for _, t := range l.tools {
			name := t.Name
			if taken[name] || count[name] > 1 || !validFunctionName(name) {
				name = m.ServerLabel + "__" + sanitizeName(t.Name)
			}
			if _, dup := st.byModelName[name]; dup || taken[name] {
				continue // two tools of one server that sanitize alike: the first wins
			}
			params := t.InputSchema
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			st.byModelName[name] = hostedRef{server: srv, name: t.Name, approval: m.Approval.Required(t)}
			st.modelNames[[2]string{m.ServerLabel, t.Name}] = name
			out.Tools = append(out.Tools, hearth.Tool{Type: hearth.ToolFunction, Name: name, Description: t.Description, Parameters: params,
				Strict: e.strictHosted(ctx, m.ServerLabel, name, params)})
		}
	}
	if c := req.ToolChoice; c.Type == hearth.ToolMCP {
		var names []hearth.ToolRef
		for model, ref := range st.byModelName {
			if ref.server.Label == c.ServerLabel && (c.Name == "" || ref.name == c.Name) {
				names = append(names, hearth.ToolRef{Type: hearth.ToolFunction, Name: model})
			}
		}
		if len(names) == 0 {
			return nil, nil, nil, nil, hearth.InvalidRequest("tool_choice.name", hearth.CodeInvalidValue,
				fmt.Sprintf("Tool choice 'mcp' names tool '%s' of server '%s', which the server does not offer.", c.Name, c.ServerLabel))
		}
		slices.SortFunc(names, func(a, b hearth.ToolRef) int { return strings.Compare(a.Name, b.Name) })
		if len(names) == 1 {
			out.ToolChoice = hearth.ToolChoice{Type: hearth.ToolFunction, Name: names[0].Name}
		} else {
			out.ToolChoice = hearth.ToolChoice{Type: "allowed_tools", Mode: hearth.ToolChoiceRequired, Allowed: names}
		}
	}
	caller := callerFrom(ctx)
	approvals, err := st.answeredApprovals(history, input, func(it hearth.Item) bool { return e.approvalIssued(caller, it) })
	if err != nil {
		return nil, nil, nil, nil, err
	}
	st.approved = approvals
	return &out, st.asCalls(history, input), st.asCalls(input, history), st, nil
}

// mcpAsCalls renders the MCP items of a conversation in function-call terms, for a
// caller that has no hosted tools to offer (compaction).
func mcpAsCalls(history, input []hearth.Item) ([]hearth.Item, []hearth.Item) {
	st := &hostedState{byModelName: map[string]hostedRef{}, modelNames: map[[2]string]string{}}
	return st.asCalls(history, input), st.asCalls(input, history)
}

// strictHosted makes a server's tool strict when the runtime can turn its schema into
// a grammar: hearth runs the call itself, so its arguments are generated under the
// schema and validated before they reach the server, never passed on malformed. A
// schema the grammar cannot express is offered as a plain function (and the call is
// the server's to refuse).
func (e *Engine) strictHosted(ctx context.Context, label, name string, params json.RawMessage) *bool {
	err := e.checkToolGrammar(ctx, toolgrammar.Tool{Name: name, Parameters: params})
	if err != nil {
		e.log.Info("mcp tool offered without a grammar", "server", label, "tool", name, "reason", err)
	}
	strict := err == nil
	return &strict
}

// laterTurnKey marks the context of a response's later turns: their listings are the
// response's own, made for this very request, and never listed again.
type laterTurnKey struct{}

func laterTurn(ctx context.Context) bool { return ctx.Value(laterTurnKey{}) != nil }

func hasMCPItems(items []hearth.Item) bool {
	for _, it := range items {
		switch it.Type {
		case hearth.ItemMCPListTools, hearth.ItemMCPCall, hearth.ItemMCPApprovalRequest, hearth.ItemMCPApprovalResponse:
			return true
		}
	}
	return false
}

// reusedListing returns the tools of the chain's last successful listing of label:
// a continuation offers the tools the conversation already knows, as OpenAI does,
// rather than listing them again.
func reusedListing(label string, lists ...[]hearth.Item) ([]hearth.MCPToolInfo, bool) {
	var tools []hearth.MCPToolInfo
	found := false
	for _, items := range lists {
		for _, it := range items {
			if it.Type == hearth.ItemMCPListTools && it.ServerLabel == label && it.Error == "" {
				tools, found = it.MCPTools, true
			}
		}
	}
	return tools, found
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

// modelName is the function name the model knows a server's tool by: the one this
// response offers, else the tool's own name (a call of an earlier turn).
func (st *hostedState) modelName(label, tool string) string {
	if n, ok := st.modelNames[[2]string{label, tool}]; ok {
		return n
	}
	return tool
}

// asCalls renders MCP items in function-call terms, the shape every template knows:
// an mcp_call is a call and its result; a denied approval request a call and the
// denial; listings, pending requests and the answers to them are not shown.
//
// other is the rest of the conversation (history for input, input for history): an
// answer to a request may be in either.
func (st *hostedState) asCalls(items, other []hearth.Item) []hearth.Item {
	if !hasMCPItems(items) {
		return items
	}
	denied := map[string]string{}
	for _, list := range [][]hearth.Item{items, other} {
		for _, it := range list {
			if it.Type == hearth.ItemMCPApprovalResponse && it.Approve != nil && !*it.Approve {
				denied[it.ApprovalRequestID] = it.Reason
			}
		}
	}
	out := make([]hearth.Item, 0, len(items))
	for _, it := range items {
		switch it.Type {
		case hearth.ItemMCPListTools, hearth.ItemMCPApprovalResponse:
		case hearth.ItemMCPCall:
			result := it.Output.Text
			if it.Error != "" {
				result = "Error: " + it.Error
			}
			out = append(out,
				hearth.Item{Type: hearth.ItemFunctionCall, CallID: it.ID, Name: st.modelName(it.ServerLabel, it.Name), Arguments: it.Arguments, Status: hearth.StatusCompleted},
				hearth.Item{Type: hearth.ItemFunctionCallOutput, CallID: it.ID, Output: hearth.ToolOutput{Text: result}})
		case hearth.ItemMCPApprovalRequest:
			reason, ok := denied[it.ID]
			if !ok {
				continue
			}
			result := "The user denied this call."
			if reason != "" {
				result += " Reason: " + reason
			}
			out = append(out,
				hearth.Item{Type: hearth.ItemFunctionCall, CallID: it.ID, Name: st.modelName(it.ServerLabel, it.Name), Arguments: it.Arguments, Status: hearth.StatusCompleted},
				hearth.Item{Type: hearth.ItemFunctionCallOutput, CallID: it.ID, Output: hearth.ToolOutput{Text: result}})
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
	ref hostedRef
}

// answeredApprovals returns the calls the request's input approves, and checks every
// answer names a request of the conversation that no call ran yet. An approved request
// runs only when hearth issued it to this caller, as it stands (issued: its id's
// proof, sealed.go), and only through the tools of this request: its server and tool
// must be an mcp tool the request offers, with that tool's server (URL, headers) and
// after its allowed_tools, never a server the item alone names. A request of the
// input that fails its proof is named (input[k]); one of the stored conversation by
// the answer that approves it.
func (st *hostedState) answeredApprovals(history, input []hearth.Item, issued func(hearth.Item) bool) ([]approvedCall, error) {
	type found struct {
		it hearth.Item
		at int // its index in input, -1 in history
	}
	requests := map[string]found{}
	ran := map[string]bool{}
	for n, items := range [][]hearth.Item{history, input} {
		for k, it := range items {
			switch it.Type {
			case hearth.ItemMCPApprovalRequest:
				at := -1
				if n == 1 {
					at = k
				}
				requests[it.ID] = found{it, at}
			case hearth.ItemMCPCall:
				if it.ApprovalRequestID != "" {
					ran[it.ApprovalRequestID] = true
				}
			}
		}
	}
	var approved []approvedCall
	for i, it := range input {
		if it.Type != hearth.ItemMCPApprovalResponse {
			continue
		}
		p := fmt.Sprintf("input[%d].approval_request_id", i)
		f, ok := requests[it.ApprovalRequestID]
		if !ok {
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
				fmt.Sprintf("No mcp_approval_request found with id %s.", it.ApprovalRequestID))
		}
		if ran[it.ApprovalRequestID] {
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
				fmt.Sprintf("The mcp_approval_request %s was answered already.", it.ApprovalRequestID))
		}
		if !*it.Approve {
			// A denial runs nothing: the model reads that the user said no.
			continue
		}
		// Answered now: a second approval of it in the same input is answered too.
		ran[it.ApprovalRequestID] = true
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
		ref, ok := st.byModelName[st.modelName(req.ServerLabel, req.Name)]
		if !ok || ref.server.Label != req.ServerLabel || ref.name != req.Name {
			p = fmt.Sprintf("input[%d]", i)
			return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf(
				"Invalid '%s': the approved call is of tool '%s' of MCP server '%s', which this request's tools do not offer;"+
					" approve it with the mcp tool that asked for it in tools.", p, req.Name, req.ServerLabel))
		}
		approved = append(approved, approvedCall{req, ref})
	}
	return approved, nil
}

// lookup returns the hosted tool the model calls by name.
func (st *hostedState) lookup(name string) (hostedRef, bool) {
	if st == nil {
		return hostedRef{}, false
	}
	r, ok := st.byModelName[name]
	return r, ok
}

// call runs one hosted call whose mcp_call item is open in b, and ends the item with
// the tool's output or error. A failed call is the model's to read, not the end of
// the response; only the client's leaving (ctx) ends it.
func (st *hostedState) call(ctx context.Context, b *hearth.Builder, ref hostedRef, arguments string) error {
	st.calls++
	st.turnCalls++
	if err := b.MCPArgumentsDone(); err != nil {
		return err
	}
	args := json.RawMessage(arguments)
	if strings.TrimSpace(arguments) == "" {
		args = json.RawMessage("{}")
	}
	res, err := st.h.CallTool(ctx, ref.server, ref.name, args)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case err != nil:
		st.log.Warn("mcp call failed", "server", ref.server.Label, "tool", ref.name, "error", err)
		return b.EndMCPCall("", err.Error())
	case res.IsError:
		st.log.Info("mcp tool reported an error", "server", ref.server.Label, "tool", ref.name)
		return b.EndMCPCall("", res.Output)
	}
	st.log.Info("mcp call", "server", ref.server.Label, "tool", ref.name)
	return b.EndMCPCall(res.Output, "")
}

// start reports what a turn does before it generates: the servers' listings, then
// the calls the client approved.
func (st *hostedState) start(ctx context.Context, b *hearth.Builder) error {
	if st == nil {
		return nil
	}
	for _, it := range st.listings {
		if err := b.AddMCPListTools(it); err != nil {
			return err
		}
	}
	for _, a := range st.approved {
		if err := b.StartMCPCall(a.req.ServerLabel, a.req.Name, a.req.ID); err != nil {
			return err
		}
		if err := b.ArgumentsDelta(a.req.Arguments); err != nil {
			return err
		}
		if err := st.call(ctx, b, a.ref, a.req.Arguments); err != nil {
			return err
		}
	}
	st.turnStart = len(b.Response().Output)
	return nil
}

// maxTurns bounds the turns of one response: a model that calls hosted tools for
// ever still ends (the response is then incomplete, as at the call cap).
const maxTurns = 32

// complete ends a turn that finished normally: the response completes, unless the
// turn made hosted calls and nothing of it is the client's to run, when the model
// continues with the results in its prompt. usage is the turn's own.
func (j *Job) complete(ctx context.Context, b *hearth.Builder, usage hearth.Usage) error {
	st := j.hosted
	if st == nil {
		b.Complete(usage)
		return nil
	}
	total := st.total(usage)
	output := b.Response().Output
	clientCalls := false
	for _, it := range output[min(st.turnStart, len(output)):] {
		switch it.Type {
		case hearth.ItemFunctionCall, hearth.ItemCustomToolCall, hearth.ItemMCPApprovalRequest:
			clientCalls = true
		}
	}
	if st.turnCalls == 0 || clientCalls {
		b.Complete(total)
		return nil
	}
	if j.turn+1 >= maxTurns {
		b.Incomplete(IncompleteToolCallLimit, total)
		return nil
	}
	next := *st.orig
	next.Input = nil
	history := make([]hearth.Item, 0, len(st.history)+len(st.orig.Input)+len(output))
	history = append(append(append(history, st.history...), st.orig.Input...), output...)
	if st.orig.MaxOutputTokens != nil {
		left := *st.orig.MaxOutputTokens - total.OutputTokens
		if left <= 0 {
			b.Incomplete(hearth.IncompleteMaxOutputTokens, total)
			return nil
		}
		next.MaxOutputTokens = &left
	}
	if st.orig.MaxToolCalls != nil {
		left := *st.orig.MaxToolCalls - st.calls
		if left <= 0 {
			// No calls left: the model answers from what it has.
			next.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceNone}
		} else {
			next.MaxToolCalls = &left
		}
	}
	if next.ToolChoice.EffectiveMode() == hearth.ToolChoiceRequired {
		// The required call was made; what follows is the model's choice.
		next.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceAuto}
	}
	// The later turn's requests are issued to the same caller, whatever ctx carries.
	nj, err := j.e.prepare(WithCaller(context.WithValue(ctx, laterTurnKey{}, true), j.caller), &next, history)
	if err != nil {
		var herr *hearth.Error
		if !errors.As(err, &herr) {
			herr = hearth.ServerError(err.Error())
		}
		b.Fail(herr, &total)
		return err
	}
	nj.turn = j.turn + 1
	if nj.hosted != nil {
		nj.hosted.prior = total
		nj.hosted.calls = st.calls
		nj.hosted.orig, nj.hosted.history = st.orig, st.history
		// The response's own earlier output is in the history now: nothing there
		// is an approval to run again.
		nj.hosted.approved = nil
	}
	return nj.Run(ctx, b)
}

// total adds the usage of the earlier turns to a turn's.
func (st *hostedState) total(u hearth.Usage) hearth.Usage {
	if st == nil {
		return u
	}
	p := st.prior
	u.InputTokens += p.InputTokens
	u.OutputTokens += p.OutputTokens
	u.TotalTokens = 0
	u.InputTokensDetails.CachedTokens += p.InputTokensDetails.CachedTokens
	u.OutputTokensDetails.ReasoningTokens += p.OutputTokensDetails.ReasoningTokens
	return u
}

// hostedFailed ends a response whose hosted tools could not start: the client left,
// or the builder refused.
func (j *Job) hostedFailed(ctx context.Context, b *hearth.Builder, err error) error {
	usage := j.hosted.total(hearth.Usage{})
	if ctx.Err() != nil {
		b.Incomplete(IncompleteClientDisconnected, usage)
		return ctx.Err()
	}
	b.Fail(hearth.ServerError(err.Error()), &usage)
	return err
}
