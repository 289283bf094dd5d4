package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Hosted tool kinds declare themselves here, the way package image is told of its
// formats by image.RegisterFormat: a kind (a package of its own) registers its item
// types, its request tool types, its streaming events and the include values it
// serves, and the decoder, the item and event writers and the Builder then handle
// them without naming any kind. A kind registers in its package's init, so wiring it
// (importing it) is what makes hearth speak its shapes; a type no registered kind
// declares is what it was before any kind existed: an unknown item type is a 400, an
// unknown tool type a hosted tool kept as sent and reported ignored.

// Kind is what one hosted kind declares.
type Kind struct {
	// Name names the kind in errors about its registration.
	Name string
	// Order places the kind's names in the lists error messages give (the item types
	// a request may send, the include values): lower first, then by registration.
	Order  int
	Items  []ItemType
	Tools  []ToolType
	Events []EventType
	// Includes are the values of include the kind serves.
	Includes []string
}

// ItemType is one item type of a kind.
type ItemType struct {
	Type string
	// InputIDPrefix is the id prefix of an input item of the type that came without
	// an id; "" gives it a message's.
	InputIDPrefix string
	// Statuses are the values its status may take; nil allows the statuses every
	// item has (in_progress, completed, incomplete).
	Statuses []string
	// Decode reads the item's own fields from o into it: its type, id and status are
	// read already. Every failure is an *Error naming the field (o.At).
	Decode func(o Object, it *Item) error
	// Marshal writes the item in its wire shape.
	Marshal func(it Item) ([]byte, error)
	// Call says the item is a call the model makes: the message the model wrote
	// before it is commentary.
	Call bool
	// Arguments says Builder.ArgumentsDelta appends the model's arguments to the
	// open item's Arguments; ArgumentsEvent, when set, is the event type each delta
	// is streamed as (none: the item carries them, no event does).
	Arguments      bool
	ArgumentsEvent string
	// AddedAtEnd holds the item's output_item.added back until the item ends (its
	// id or arguments are known only then).
	AddedAtEnd bool
	// Close runs as the Builder ends an open item of the type with status, before
	// output_item.done: the item's own closing events (Builder.ItemEvent), its
	// final id.
	Close func(b *Builder, it *Item, status string)
}

// ToolType is one request tool type of a kind, or several types served alike
// (OpenAI's name of a tool and its dated versions).
type ToolType struct {
	Types []string
	// Decode reads a request tool of the type into the kind's value (Tool.Spec);
	// Tool.Raw keeps it as sent, for the echo. nil keeps it as sent only.
	Decode func(o Object) (any, error)
	// Runs says hearth always runs tools of the type: they are never reported
	// ignored. A kind whose tools run only when it is configured leaves it false:
	// the server then reports the tool ignored where the engine has no kind for it.
	Runs bool
	// Unique, when set, names what no two tools of the type in one request may
	// share: the field (".server_label") and its value.
	Unique func(t *Tool) (field, value string)
	// Forced says tool_choice may force a tool of the type ({"type": T}): a call
	// is then required. ChoiceDecode reads the fields of such a choice beyond its
	// type (nil: the type alone), ChoiceCheck checks it against the request's tools
	// (nil: a tool of the type must be there), ChoiceMarshal writes it (nil: the
	// type alone).
	Forced        bool
	ChoiceDecode  func(o Object, c *ToolChoice) error
	ChoiceCheck   func(c ToolChoice, tools []Tool) error
	ChoiceMarshal func(c ToolChoice) ([]byte, error)
	// Allowed says allowed_tools may name a tool of the type by its type alone.
	Allowed bool
	// Callable says a tool of the type is a call the model can make: a request
	// whose tool_choice requires a call may have it as its only tool.
	Callable bool
	// LoadsDeferred says the tool loads the request's deferred tools
	// (defer_loading): a request may have one, and it needs deferred tools.
	LoadsDeferred bool
}

// EventType is one streaming event of a kind, and the fields it carries.
type EventType struct {
	Type  string
	Shape EventShape
}

// EventShape is which fields an event of a kind carries beyond its type and sequence
// number.
type EventShape int

const (
	// EventItemOnly: item_id and output_index.
	EventItemOnly EventShape = iota
	// EventItemDelta: item_id, output_index and delta.
	EventItemDelta
	// EventItemArguments: item_id, output_index and arguments.
	EventItemArguments
)

// HostedData is what an item of a kind carries of its own, beyond the fields every
// item has (Item.Hosted). The kind's package defines it, and typed accessors for it.
type HostedData interface {
	// CloneHosted returns a copy that shares nothing the Builder may change later.
	CloneHosted() HostedData
}

// The registries. They are written while packages initialise (RegisterKind) and
// only read afterwards: a lookup is a map read.
var (
	kinds       []Kind
	itemTypes   = map[string]*ItemType{}
	toolTypes   = map[string]*ToolType{}
	eventShapes = map[string]EventShape{}
	// kindItemTypes and kindIncludes list the kinds' item types and include
	// values in Order, for the enumerations of error messages.
	kindItemTypes, kindIncludes []string
)

// RegisterKind declares a hosted kind's items, tools, events and include values.
// Call it from the kind package's init; a name any kind declared already panics,
// as it is a wiring mistake.
func RegisterKind(k Kind) {
	// All checked before any is registered: a refused kind leaves no part behind.
	for _, t := range k.Items {
		if _, dup := itemTypes[t.Type]; dup || slices.Contains(baseItemTypes, t.Type) {
			panic(fmt.Sprintf("hearth: kind %s: item type %q registered twice", k.Name, t.Type))
		}
	}
	for _, t := range k.Tools {
		for _, typ := range t.Types {
			if _, dup := toolTypes[typ]; dup || typ == ToolFunction || typ == ToolNamespace || typ == ToolCustom {
				panic(fmt.Sprintf("hearth: kind %s: tool type %q registered twice", k.Name, typ))
			}
		}
	}
	for _, e := range k.Events {
		if _, dup := eventShapes[e.Type]; dup {
			panic(fmt.Sprintf("hearth: kind %s: event %q registered twice", k.Name, e.Type))
		}
	}
	for i := range k.Items {
		itemTypes[k.Items[i].Type] = &k.Items[i]
	}
	for i := range k.Tools {
		for _, typ := range k.Tools[i].Types {
			toolTypes[typ] = &k.Tools[i]
		}
	}
	for _, e := range k.Events {
		eventShapes[e.Type] = e.Shape
	}
	kinds = append(kinds, k)
	slices.SortStableFunc(kinds, func(a, b Kind) int { return a.Order - b.Order })
	kindItemTypes, kindIncludes = nil, nil
	for _, k := range kinds {
		for _, t := range k.Items {
			kindItemTypes = append(kindItemTypes, t.Type)
		}
		kindIncludes = append(kindIncludes, k.Includes...)
	}
	enumItemType = append(slices.Clip(baseItemTypes), kindItemTypes...)
	enumInclude = append(slices.Clip(baseIncludes), kindIncludes...)
}

// marshalHostedItem writes an item of a kind's type; ok is false for an unknown one.
func marshalHostedItem(it Item) (data []byte, ok bool, err error) {
	t := itemTypes[it.Type]
	if t == nil || t.Marshal == nil {
		return nil, false, nil
	}
	data, err = t.Marshal(it)
	return data, true, err
}

// DecodeTool reads one request tool at path with the request decoder's rules (a
// kind's item that carries tools, such as loaded ones, reads them with it).
func DecodeTool(raw json.RawMessage, path string) (Tool, error) {
	return decodeTool(raw, path, false)
}

// Strings reads elems (the array at path) as strings; an element of another type is
// an *Error naming it (path[i]).
func Strings(elems []json.RawMessage, path string) ([]string, error) {
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, err := asString(e, indexPath(path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// AsCall is a kind's call in function-call terms, the shape every template knows: the
// call of name with arguments, completed, and its output (a later turn, or a request
// that no longer offers the kind's tools, shows the model its calls so).
func AsCall(callID, name, arguments, output string) []Item {
	return []Item{
		{Type: ItemFunctionCall, CallID: callID, Name: name, Arguments: arguments, Status: StatusCompleted},
		{Type: ItemFunctionCallOutput, CallID: callID, Output: ToolOutput{Text: output}},
	}
}

// Builder hooks: what a kind's own Builder functions are made of.

// OpenItem completes the open item, if any, and starts it, in progress: the kind sets
// its type, id and fields. output_item.added follows at once, or when the item ends
// for a type whose registration says AddedAtEnd.
func (b *Builder) OpenItem(it Item) error { return b.startItem(it) }

// Open returns the open item when it is of type typ: the kind changes it in place
// while it is open.
func (b *Builder) Open(typ string) (*Item, error) {
	if b.state == stateFinished {
		return nil, ErrFinished
	}
	if b.cur < 0 || b.resp.Output[b.cur].Type != typ {
		return nil, fmt.Errorf("hearth: no %s open", typ)
	}
	return &b.resp.Output[b.cur], nil
}

// ItemEvent sends e as an event of the open item: its item_id and output_index are
// the open item's.
func (b *Builder) ItemEvent(e Event) {
	if b.cur < 0 {
		return
	}
	e.ItemID, e.OutputIndex = b.resp.Output[b.cur].ID, b.cur
	b.send(e)
}

// CloseItem ends the open item with status, which a kind's item may have beyond
// completed and incomplete (failed): output_item.done.
func (b *Builder) CloseItem(status string) error {
	if b.state == stateFinished {
		return ErrFinished
	}
	if b.cur < 0 {
		return fmt.Errorf("hearth: CloseItem with no item open")
	}
	b.closeItem(status)
	return nil
}

// EndCall ends the open item of a kind as a search call ends: failed, with no event of
// its own; or completed, reporting completedEvent first. Either way the item's
// response.output_item.done follows.
func (b *Builder) EndCall(completedEvent string, failed bool) error {
	if failed {
		return b.CloseItem(StatusFailed)
	}
	b.ItemEvent(Event{Type: completedEvent})
	return b.CloseItem(StatusCompleted)
}

// KindState is a kind's own state on this Builder under key (what the response's
// searches found, hooks its plan attached), made by make on first use.
func (b *Builder) KindState(key any, make func() any) any {
	if v, ok := b.kindState[key]; ok {
		return v
	}
	if b.kindState == nil {
		b.kindState = map[any]any{}
	}
	v := make()
	b.kindState[key] = v
	return v
}

// Citer finds what a finished output_text part cites of what a kind's tools found:
// the part's annotations.
type Citer interface {
	Cite(text string) []Annotation
	// CiteOrder places its annotations among other kinds' on one part: lower first.
	CiteOrder() int
}

// AddCiter has output text the response writes from now on annotated by c as each
// part ends (once per c).
func (b *Builder) AddCiter(c Citer) {
	if slices.Contains(b.citers, c) {
		return
	}
	b.citers = append(b.citers, c)
	slices.SortStableFunc(b.citers, func(x, y Citer) int { return x.CiteOrder() - y.CiteOrder() })
}

// uniqueOf is what a kind's tool may not share with another of its type
// (ToolType.Unique); ok is false for a tool that has nothing of the kind.
func uniqueOf(t *Tool) (field, value string, ok bool) {
	k := toolTypes[t.Type]
	if k == nil || k.Unique == nil {
		return "", "", false
	}
	field, value = k.Unique(t)
	return field, value, true
}

// allowedRefTypes are the tool types an allowed_tools entry may have.
func allowedRefTypes() []string {
	types := []string{ToolFunction, ToolCustom}
	for _, k := range kinds {
		for _, t := range k.Tools {
			if t.Allowed {
				types = append(types, t.Types...)
			}
		}
	}
	return types
}

// forcibleList names the tool types tool_choice may force, for its error: a kind's
// tool by its first type (not its dated versions).
func forcibleList() string {
	names := []string{"'" + ToolFunction + "'", "'" + ToolCustom + "'"}
	for _, k := range kinds {
		for _, t := range k.Tools {
			if t.Forced && len(t.Types) > 0 {
				names = append(names, "'"+t.Types[0]+"'")
			}
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// checkDeferred validates defer_loading across a request's tools: only function and
// custom tools, and the functions of a namespace, can be deferred (a namespace
// itself cannot: OpenAI defers its functions), and a tool that loads deferred tools
// (ToolType.LoadsDeferred) may be given once and needs something to load. It reports
// whether the request has such a tool, in which case its deferred tools are
// honoured rather than ignored.
func checkDeferred(tools []Tool) (searches bool, err error) {
	deferred, search := 0, -1
	for i, t := range tools {
		k := toolTypes[t.Type]
		switch {
		case k != nil && k.LoadsDeferred:
			if search >= 0 {
				p := indexPath("tools", i)
				return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
					"Invalid '%s': only one %s tool may be given (another is tools[%d]).", p, t.Type, search))
			}
			search = i
		case t.Type == ToolNamespace:
			if t.DeferLoading {
				p := indexPath("tools", i) + ".defer_loading"
				return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
					"Invalid '%s': a namespace cannot be deferred; set defer_loading on the functions inside it.", p))
			}
			for _, c := range t.Tools {
				if c.DeferLoading {
					deferred++
				}
			}
		case t.DeferLoading:
			deferred++
		case t.Hosted() && rawDefers(t.Raw):
			p := indexPath("tools", i) + ".defer_loading"
			return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
				"Invalid '%s': hearth can defer function and custom tools (and the functions of a namespace), not '%s' tools.", p, t.Type))
		}
	}
	if search >= 0 && deferred == 0 {
		p := indexPath("tools", search)
		return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
			"Invalid '%s': a %s tool needs deferred tools to search; mark some function tools (or functions of a namespace) with \"defer_loading\": true.", p, tools[search].Type))
	}
	return search >= 0, nil
}

// rawDefers reports whether a tool kept as sent asks to be deferred.
func rawDefers(raw json.RawMessage) bool {
	var f struct {
		DeferLoading bool `json:"defer_loading"`
	}
	return json.Unmarshal(raw, &f) == nil && f.DeferLoading
}

// forcedKind is the declaration of a tool type tool_choice may force, nil for none.
func forcedKind(typ string) *ToolType {
	if k := toolTypes[typ]; k != nil && k.Forced {
		return k
	}
	return nil
}
