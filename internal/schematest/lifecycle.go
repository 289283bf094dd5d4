package schematest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// ReadSSE reads a text/event-stream body as hearth frames it and returns the
// decoded events. It enforces the spec's framing: every frame's "event:"
// equals its data's type, and the stream ends with "data: [DONE]". Comment
// lines (": ..." heartbeats) are skipped.
func ReadSSE(r io.Reader) ([]map[string]any, error) {
	var (
		events    []map[string]any
		name      string
		data      []string
		sawDone   bool
		lineNo    int
		sc        = bufio.NewScanner(r)
		endOfLine = func() error {
			if len(data) == 0 {
				if name != "" {
					return fmt.Errorf("line %d: event %q without data", lineNo, name)
				}
				return nil
			}
			payload := strings.Join(data, "\n")
			defer func() { name, data = "", nil }()
			if payload == "[DONE]" {
				sawDone = true
				return nil
			}
			if sawDone {
				return fmt.Errorf("line %d: frame after [DONE]", lineNo)
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(payload), &ev); err != nil {
				return fmt.Errorf("line %d: data is not a JSON object: %v", lineNo, err)
			}
			if typ, _ := ev["type"].(string); typ != name {
				return fmt.Errorf("line %d: event: %q but type %q", lineNo, name, typ)
			}
			events = append(events, ev)
			return nil
		}
	)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		switch {
		case line == "":
			if err := endOfLine(); err != nil {
				return events, err
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "id:"):
			return events, fmt.Errorf("line %d: the spec says servers should not send id", lineNo)
		}
	}
	if err := sc.Err(); err != nil {
		return events, err
	}
	if err := endOfLine(); err != nil {
		return events, err
	}
	if !sawDone {
		return events, fmt.Errorf("stream ended without data: [DONE]")
	}
	return events, nil
}

// CheckLifecycle checks the order rules of one response's event stream (as
// decoded JSON objects):
//
//   - sequence_number strictly increases;
//   - response.created comes first, then optionally response.queued, then
//     response.in_progress before any item event; all carry the same id;
//   - items come one at a time: output_item.added (status in_progress,
//     output_index = count so far), then its parts and deltas, then
//     output_item.done; every delta follows its item's added event and its
//     part's added event, and names the right item_id, output_index and
//     content_index / summary_index;
//   - each part ends with its .done (text equal to the concatenated deltas)
//     before content_part.done (or reasoning_summary_part.done);
//     function_call_arguments.done (arguments equal to the deltas) comes
//     before the call's output_item.done, as custom_tool_call_input.done
//     (input equal to the deltas) comes before a custom tool call's;
//   - an incomplete item is the last item;
//   - exactly one terminal event, last: response.completed, .incomplete or
//     .failed (an error event may come right before response.failed), whose
//     response has the matching status and, as output, exactly the items of
//     the output_item.done events.
func CheckLifecycle(events []map[string]any) error {
	c := &lifecycle{lastSeq: -1}
	for i, e := range events {
		if err := c.step(e); err != nil {
			typ, _ := e["type"].(string)
			return fmt.Errorf("event %d (%s): %w", i, typ, err)
		}
	}
	if !c.terminated {
		return fmt.Errorf("stream has no terminal event")
	}
	return nil
}

type partState struct {
	typ      string
	text     string
	textDone bool
	open     bool
}

type itemState struct {
	id        string
	index     int
	typ       string
	parts     []*partState
	summaries []*partState
	args      string
	argsDone  bool
	input     string
	inputDone bool
}

type lifecycle struct {
	lastSeq       int
	created       bool
	inProgress    bool
	terminated    bool
	sawError      bool
	responseID    string
	open          *itemState
	doneItems     []any
	incompleteEnd bool
}

func (c *lifecycle) step(e map[string]any) error {
	typ, _ := e["type"].(string)
	seq, ok := e["sequence_number"].(float64)
	if !ok || seq != float64(int(seq)) {
		return fmt.Errorf("sequence_number missing or not an integer")
	}
	if int(seq) <= c.lastSeq {
		return fmt.Errorf("sequence_number %d does not increase (previous %d)", int(seq), c.lastSeq)
	}
	c.lastSeq = int(seq)
	if c.terminated {
		return fmt.Errorf("event after the terminal event")
	}
	if !c.created && typ != "response.created" {
		return fmt.Errorf("first event must be response.created")
	}
	if c.sawError && typ != "response.failed" {
		return fmt.Errorf("an error event must be followed by response.failed")
	}

	switch typ {
	case "response.created", "response.queued", "response.in_progress":
		return c.lifecycleEvent(typ, e)
	case "response.completed", "response.incomplete", "response.failed":
		return c.terminal(typ, e)
	case "error":
		c.sawError = true
		return nil
	}
	if !c.inProgress {
		return fmt.Errorf("item event before response.in_progress")
	}
	switch typ {
	case "response.output_item.added":
		return c.itemAdded(e)
	case "response.output_item.done":
		return c.itemDone(e)
	case "response.content_part.added":
		return c.partAdded(e, false)
	case "response.reasoning_summary_part.added":
		return c.partAdded(e, true)
	case "response.content_part.done":
		return c.partDone(e, false)
	case "response.reasoning_summary_part.done":
		return c.partDone(e, true)
	case "response.output_text.delta":
		return c.delta(e, false, "output_text", "delta", false)
	case "response.output_text.done":
		return c.delta(e, false, "output_text", "text", true)
	case "response.refusal.delta":
		return c.delta(e, false, "refusal", "delta", false)
	case "response.refusal.done":
		return c.delta(e, false, "refusal", "refusal", true)
	case "response.reasoning.delta":
		return c.delta(e, false, "reasoning_text", "delta", false)
	case "response.reasoning.done":
		return c.delta(e, false, "reasoning_text", "text", true)
	case "response.reasoning_summary_text.delta":
		return c.delta(e, true, "summary_text", "delta", false)
	case "response.reasoning_summary_text.done":
		return c.delta(e, true, "summary_text", "text", true)
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		return c.arguments(e, typ == "response.function_call_arguments.done")
	case "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done":
		return c.customInput(e, typ == "response.custom_tool_call_input.done")
	case "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done":
		return c.arguments(e, typ == "response.mcp_call_arguments.done")
	case "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.mcp_list_tools.failed":
		return c.itemEvent(e, "mcp_list_tools")
	case "response.mcp_call.in_progress", "response.mcp_call.completed", "response.mcp_call.failed":
		return c.itemEvent(e, "mcp_call")
	case "response.web_search_call.in_progress", "response.web_search_call.searching", "response.web_search_call.completed":
		return c.itemEvent(e, "web_search_call")
	case "response.output_text.annotation.added":
		_, err := c.openItemFor(e)
		return err
	}
	return fmt.Errorf("unknown event type %q", typ)
}

func (c *lifecycle) lifecycleEvent(typ string, e map[string]any) error {
	resp, ok := e["response"].(map[string]any)
	if !ok {
		return fmt.Errorf("no response object")
	}
	id, _ := resp["id"].(string)
	status, _ := resp["status"].(string)
	switch typ {
	case "response.created":
		if c.created {
			return fmt.Errorf("second response.created")
		}
		if id == "" {
			return fmt.Errorf("response has no id")
		}
		if out, _ := resp["output"].([]any); len(out) != 0 {
			return fmt.Errorf("response.created with output items")
		}
		if status != "queued" && status != "in_progress" {
			return fmt.Errorf("response.created with status %q", status)
		}
		c.created, c.responseID = true, id
	case "response.queued":
		if c.inProgress {
			return fmt.Errorf("response.queued after response.in_progress")
		}
		if status != "queued" {
			return fmt.Errorf("response.queued with status %q", status)
		}
	case "response.in_progress":
		if c.inProgress {
			return fmt.Errorf("second response.in_progress")
		}
		if status != "in_progress" {
			return fmt.Errorf("response.in_progress with status %q", status)
		}
		c.inProgress = true
	}
	if id != c.responseID {
		return fmt.Errorf("response id %q differs from response.created's %q", id, c.responseID)
	}
	return nil
}

func (c *lifecycle) terminal(typ string, e map[string]any) error {
	if !c.inProgress {
		return fmt.Errorf("terminal event before response.in_progress")
	}
	if c.open != nil {
		return fmt.Errorf("terminal event while item %s is open", c.open.id)
	}
	resp, ok := e["response"].(map[string]any)
	if !ok {
		return fmt.Errorf("no response object")
	}
	if id, _ := resp["id"].(string); id != c.responseID {
		return fmt.Errorf("response id %q differs from response.created's %q", id, c.responseID)
	}
	want := strings.TrimPrefix(typ, "response.")
	if status, _ := resp["status"].(string); status != want {
		return fmt.Errorf("%s with status %q", typ, status)
	}
	if c.incompleteEnd && typ == "response.completed" {
		return fmt.Errorf("response.completed after an incomplete item")
	}
	if typ == "response.completed" {
		if _, ok := resp["usage"].(map[string]any); !ok {
			return fmt.Errorf("response.completed without usage")
		}
	}
	out, _ := resp["output"].([]any)
	if len(out) != len(c.doneItems) {
		return fmt.Errorf("response has %d output items, the stream finished %d", len(out), len(c.doneItems))
	}
	for i := range out {
		if !reflect.DeepEqual(out[i], c.doneItems[i]) {
			a, _ := json.Marshal(out[i])
			b, _ := json.Marshal(c.doneItems[i])
			return fmt.Errorf("output[%d] differs from its output_item.done:\n  response: %s\n  event:    %s", i, a, b)
		}
	}
	c.terminated = true
	return nil
}

func (c *lifecycle) itemAdded(e map[string]any) error {
	if c.open != nil {
		return fmt.Errorf("item added while item %s is open", c.open.id)
	}
	if c.incompleteEnd {
		return fmt.Errorf("item added after an incomplete item")
	}
	item, ok := e["item"].(map[string]any)
	if !ok {
		return fmt.Errorf("no item")
	}
	idx, _ := e["output_index"].(float64)
	if int(idx) != len(c.doneItems) {
		return fmt.Errorf("output_index %d, want %d", int(idx), len(c.doneItems))
	}
	id, _ := item["id"].(string)
	if id == "" {
		return fmt.Errorf("item has no id")
	}
	if status, _ := item["status"].(string); status != "in_progress" {
		return fmt.Errorf("added item has status %q, want in_progress", status)
	}
	typ, _ := item["type"].(string)
	if typ == "function_call" || typ == "custom_tool_call" {
		if name, _ := item["name"].(string); name == "" {
			return fmt.Errorf("added %s has no name", typ)
		}
	}
	c.open = &itemState{id: id, index: int(idx), typ: typ}
	return nil
}

func (c *lifecycle) itemDone(e map[string]any) error {
	it, err := c.openItemAt(e)
	if err != nil {
		return err
	}
	item, _ := e["item"].(map[string]any)
	if id, _ := item["id"].(string); id != it.id {
		return fmt.Errorf("done item id %q, open item is %q", id, it.id)
	}
	for i, p := range it.parts {
		if p.open {
			return fmt.Errorf("content part %d still open", i)
		}
	}
	for i, p := range it.summaries {
		if p.open {
			return fmt.Errorf("summary part %d still open", i)
		}
	}
	status, _ := item["status"].(string)
	// An mcp_call or web_search_call that ended in an error is done as "failed"
	// (OpenAI's statuses of those items).
	failedCall := status == "failed" && (it.typ == "mcp_call" || it.typ == "web_search_call")
	if status != "completed" && status != "incomplete" && !failedCall {
		return fmt.Errorf("done item has status %q", status)
	}
	if err := compareParts(item["content"], it.parts, "content"); err != nil {
		return err
	}
	if it.typ == "reasoning" {
		if err := compareParts(item["summary"], it.summaries, "summary"); err != nil {
			return err
		}
	}
	if it.typ == "function_call" || it.typ == "mcp_call" {
		if !it.argsDone {
			return fmt.Errorf("%s done without %s_arguments.done", it.typ, it.typ)
		}
		if args, _ := item["arguments"].(string); args != it.args {
			return fmt.Errorf("item arguments %q, deltas gave %q", args, it.args)
		}
	}
	if it.typ == "custom_tool_call" {
		if !it.inputDone {
			return fmt.Errorf("custom_tool_call done without custom_tool_call_input.done")
		}
		if input, _ := item["input"].(string); input != it.input {
			return fmt.Errorf("item input %q, deltas gave %q", input, it.input)
		}
	}
	if status == "incomplete" {
		c.incompleteEnd = true
	}
	c.doneItems = append(c.doneItems, e["item"])
	c.open = nil
	return nil
}

// compareParts checks a done item's parts against what the stream built.
func compareParts(v any, parts []*partState, field string) error {
	list, _ := v.([]any)
	if len(list) != len(parts) {
		return fmt.Errorf("item has %d %s parts, the stream added %d", len(list), field, len(parts))
	}
	for i, p := range parts {
		m, _ := list[i].(map[string]any)
		if typ, _ := m["type"].(string); typ != p.typ {
			return fmt.Errorf("%s[%d] has type %q, stream added %q", field, i, typ, p.typ)
		}
		if got := partText(m); got != p.text {
			return fmt.Errorf("%s[%d] text %q, deltas gave %q", field, i, got, p.text)
		}
	}
	return nil
}

func partText(m map[string]any) string {
	if m["type"] == "refusal" {
		s, _ := m["refusal"].(string)
		return s
	}
	s, _ := m["text"].(string)
	return s
}

func (c *lifecycle) openItemAt(e map[string]any) (*itemState, error) {
	if c.open == nil {
		return nil, fmt.Errorf("no item is open")
	}
	idx, _ := e["output_index"].(float64)
	if int(idx) != c.open.index {
		return nil, fmt.Errorf("output_index %d, open item has %d", int(idx), c.open.index)
	}
	return c.open, nil
}

func (c *lifecycle) openItemFor(e map[string]any) (*itemState, error) {
	it, err := c.openItemAt(e)
	if err != nil {
		return nil, err
	}
	if id, _ := e["item_id"].(string); id != it.id {
		return nil, fmt.Errorf("item_id %q, open item is %q", id, it.id)
	}
	return it, nil
}

// partsOf returns the content or summary parts of the item and the index
// the event names.
func partsOf(it *itemState, e map[string]any, summary bool) (*[]*partState, int) {
	if summary {
		idx, _ := e["summary_index"].(float64)
		return &it.summaries, int(idx)
	}
	idx, _ := e["content_index"].(float64)
	return &it.parts, int(idx)
}

var allowedParts = map[string][]string{
	"message":   {"output_text", "refusal"},
	"reasoning": {"reasoning_text"},
}

func (c *lifecycle) partAdded(e map[string]any, summary bool) error {
	it, err := c.openItemFor(e)
	if err != nil {
		return err
	}
	parts, idx := partsOf(it, e, summary)
	if idx != len(*parts) {
		return fmt.Errorf("part index %d, want %d", idx, len(*parts))
	}
	for _, p := range *parts {
		if p.open {
			return fmt.Errorf("part added while another is open")
		}
	}
	part, _ := e["part"].(map[string]any)
	typ, _ := part["type"].(string)
	allowed := allowedParts[it.typ]
	if summary {
		if it.typ != "reasoning" {
			return fmt.Errorf("summary part on a %s item", it.typ)
		}
		allowed = []string{"summary_text"}
	}
	ok := false
	for _, a := range allowed {
		ok = ok || a == typ
	}
	if !ok {
		return fmt.Errorf("%s part on a %s item", typ, it.typ)
	}
	if partText(part) != "" {
		return fmt.Errorf("added part already has text")
	}
	*parts = append(*parts, &partState{typ: typ, open: true})
	return nil
}

func (c *lifecycle) partDone(e map[string]any, summary bool) error {
	it, err := c.openItemFor(e)
	if err != nil {
		return err
	}
	parts, idx := partsOf(it, e, summary)
	if idx < 0 || idx >= len(*parts) || !(*parts)[idx].open {
		return fmt.Errorf("part %d is not open", idx)
	}
	p := (*parts)[idx]
	if !p.textDone {
		return fmt.Errorf("part %d done before its text .done event", idx)
	}
	part, _ := e["part"].(map[string]any)
	if typ, _ := part["type"].(string); typ != p.typ {
		return fmt.Errorf("done part type %q, added %q", typ, p.typ)
	}
	if got := partText(part); got != p.text {
		return fmt.Errorf("done part text %q, deltas gave %q", got, p.text)
	}
	p.open = false
	return nil
}

func (c *lifecycle) delta(e map[string]any, summary bool, partType, field string, done bool) error {
	it, err := c.openItemFor(e)
	if err != nil {
		return err
	}
	parts, idx := partsOf(it, e, summary)
	if idx < 0 || idx >= len(*parts) || !(*parts)[idx].open {
		return fmt.Errorf("part %d is not open", idx)
	}
	p := (*parts)[idx]
	if p.typ != partType {
		return fmt.Errorf("%s event for a %s part", partType, p.typ)
	}
	if p.textDone {
		return fmt.Errorf("event after the part's text was done")
	}
	s, ok := e[field].(string)
	if !ok {
		return fmt.Errorf("no %s string", field)
	}
	if done {
		if s != p.text {
			return fmt.Errorf("done text %q, deltas gave %q", s, p.text)
		}
		p.textDone = true
		return nil
	}
	p.text += s
	return nil
}

func (c *lifecycle) arguments(e map[string]any, done bool) error {
	it, err := c.openItemFor(e)
	if err != nil {
		return err
	}
	typ, _ := e["type"].(string)
	if want := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(typ, "response."), "_arguments.delta"), "_arguments.done"); it.typ != want {
		return fmt.Errorf("arguments event for a %s item", it.typ)
	}
	if it.argsDone {
		return fmt.Errorf("arguments event after function_call_arguments.done")
	}
	if done {
		if args, _ := e["arguments"].(string); args != it.args {
			return fmt.Errorf("done arguments %q, deltas gave %q", args, it.args)
		}
		it.argsDone = true
		return nil
	}
	d, _ := e["delta"].(string)
	it.args += d
	return nil
}

// itemEvent checks an event about the open item as a whole (MCP's progress events).
func (c *lifecycle) itemEvent(e map[string]any, typ string) error {
	it, err := c.openItemFor(e)
	if err != nil {
		return err
	}
	if it.typ != typ {
		return fmt.Errorf("%s event for a %s item", e["type"], it.typ)
	}
	return nil
}

func (c *lifecycle) customInput(e map[string]any, done bool) error {
	it, err := c.openItemFor(e)
	if err != nil {
		return err
	}
	if it.typ != "custom_tool_call" {
		return fmt.Errorf("custom tool input event for a %s item", it.typ)
	}
	if it.inputDone {
		return fmt.Errorf("input event after custom_tool_call_input.done")
	}
	if done {
		if input, _ := e["input"].(string); input != it.input {
			return fmt.Errorf("done input %q, deltas gave %q", input, it.input)
		}
		it.inputDone = true
		return nil
	}
	d, _ := e["delta"].(string)
	it.input += d
	return nil
}
