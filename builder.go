package hearth

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Builder turns what the engine observes while generating (an item starts,
// text arrives, a call is named, arguments arrive, an item ends, the
// response ends) into the spec-ordered stream of events and, from the same
// calls, the final Response. Streaming and non-streaming responses are
// therefore derived from one source of truth: a non-streaming request uses a
// Builder with a nil emit function and returns Response() at the end.
//
// The stream it produces:
//
//	response.created, [response.queued], response.in_progress
//	per item, one at a time:
//	  response.output_item.added
//	  message:   per part: content_part.added, output_text.delta... (or
//	             refusal.delta...), output_text.done (refusal.done),
//	             content_part.done
//	  reasoning: content_part.added (reasoning_text), reasoning.delta...,
//	             reasoning.done, content_part.done; when the request asked
//	             for reasoning.summary, these nest in a summary part:
//	             reasoning_summary_part.added first, a
//	             reasoning_summary_text.delta after each reasoning.delta, and
//	             reasoning_summary_text.done, reasoning_summary_part.done last
//	  function_call: function_call_arguments.delta..., function_call_arguments.done
//	  custom_tool_call: custom_tool_call_input.delta..., custom_tool_call_input.done
//	             (OpenAI's events; the schema has no custom tools)
//	  a hosted kind's item: the events its package sends (Builder.ItemEvent);
//	             an item type registered AddedAtEnd has its output_item.added
//	             wait for its end, to carry its arguments and final id
//	  response.output_item.done
//	one terminal event: response.completed | response.incomplete |
//	  error + response.failed
//
// Sequence numbers start at 0 and increase by one per event. Parts open
// lazily on the first delta, so an item that received no text has empty
// content. Deltas switch items implicitly: TextDelta while a reasoning item
// is open completes it and starts a message, so the engine can forward what
// its parser produces without tracking item boundaries itself; the Start*
// and EndItem methods are there when it does know them.
//
// Methods return an error only when called out of order (after the terminal
// event, arguments with no call open, an item after an incomplete one); the
// stream is left consistent when they do. A Builder is not safe for
// concurrent use.
type Builder struct {
	// Now is the clock for completed_at; tests may replace it.
	Now func() time.Time
	// Seal, when set, gives each reasoning item its encrypted_content as the item
	// ends, before response.output_item.done: whatever path closes the item
	// (its end, the next item, the terminal event), the client sees it sealed.
	Seal func(Item) string

	resp  *Response
	emit  func(Event)
	seq   int
	state builderState

	// The open item's growing text fields (the streaming part's text, the mirrored
	// summary, a call's arguments), appended through these builders: see appendText.
	partText, summaryText, argsText strings.Builder

	cur      int  // index in resp.Output of the open item; -1 when none
	partOpen bool // the open item's last content part is streaming
	// phaseOpen: the open item is a message the model is writing, whose phase is
	// decided when it ends (setPhase).
	phaseOpen      bool
	lastIncomplete bool // an item ended incomplete; only the end may follow
	mirrorSummary  bool
	// addedLate: the open item's output_item.added waits for its end (a kind's item
	// type registered AddedAtEnd, whose id is known only then).
	addedLate bool
	// spent is usage counted before the response's own generation (a server-side
	// compaction's summary), added to the usage the response ends with.
	spent Usage
	// kindState is the hosted kinds' own state on this response (KindState), citers
	// what annotates its output text with what their tools found (AddCiter).
	kindState map[any]any
	citers    []Citer
}

type builderState int

const (
	stateNew builderState = iota
	stateQueued
	stateInProgress
	stateFinished
)

// ErrFinished is returned by Builder methods called after the terminal event.
var ErrFinished = errors.New("hearth: response already finished")

// NewBuilder returns a Builder that accumulates into resp (normally from
// NewResponse) and passes each event to emit, which may be nil. emit is
// called synchronously, in order; a server writes and flushes in it.
func NewBuilder(resp *Response, emit func(Event)) *Builder {
	return &Builder{
		Now:           time.Now,
		resp:          resp,
		emit:          emit,
		cur:           -1,
		mirrorSummary: resp.Reasoning != nil && resp.Reasoning.Summary != "",
	}
}

// Response returns the response being built; after the terminal event it is
// final. Callers must not modify it while the builder is in use.
func (b *Builder) Response() *Response { return b.resp }

// Current returns a copy of the open item, if any (e.g. for its call_id).
func (b *Builder) Current() (Item, bool) {
	if b.cur < 0 {
		return Item{}, false
	}
	return b.resp.Output[b.cur].Clone(), true
}

// Queue emits response.created and response.queued for a background
// response that has to wait for the runtime. Start follows later.
func (b *Builder) Queue() error {
	if b.state != stateNew {
		return fmt.Errorf("hearth: Queue after the response was created")
	}
	b.resp.Status = StatusQueued
	b.send(Event{Type: EventResponseCreated, Response: b.resp.Clone()})
	b.send(Event{Type: EventResponseQueued, Response: b.resp.Clone()})
	b.state = stateQueued
	return nil
}

// Start emits response.created (unless Queue did) and response.in_progress.
// Every other method starts the response implicitly, so calling Start is
// only needed to send those events before the first token arrives (which a
// server should, so the client sees the response id at once).
func (b *Builder) Start() error {
	switch b.state {
	case stateFinished:
		return ErrFinished
	case stateInProgress:
		return nil
	case stateNew:
		b.resp.Status = StatusInProgress
		b.send(Event{Type: EventResponseCreated, Response: b.resp.Clone()})
	}
	b.resp.Status = StatusInProgress
	b.send(Event{Type: EventResponseInProgress, Response: b.resp.Clone()})
	b.state = stateInProgress
	return nil
}

// StartMessage completes the open item, if any, and starts an assistant
// message.
func (b *Builder) StartMessage() error {
	if err := b.startItem(Item{Type: ItemMessage, ID: NewID(PrefixMessage), Role: RoleAssistant, Content: []ContentPart{}}); err != nil {
		return err
	}
	b.phaseOpen = true
	return nil
}

// setPhase decides the phase of the message the model is writing, as OpenAI labels
// its assistant messages: "commentary" when a tool call follows it in the same
// response (the model talks on its way to the call), "final_answer" otherwise. The
// item's output_item.done and the stored response carry it; a replayed message
// keeps the phase it was stored with.
func (b *Builder) setPhase(next string) {
	if !b.phaseOpen || b.cur < 0 {
		return
	}
	b.phaseOpen = false
	it := &b.resp.Output[b.cur]
	if it.Type != ItemMessage || it.Phase != "" {
		return
	}
	switch next {
	case ItemFunctionCall, ItemCustomToolCall:
		it.Phase = PhaseCommentary
	default:
		it.Phase = PhaseFinalAnswer
		if k := itemTypes[next]; k != nil && k.Call {
			it.Phase = PhaseCommentary
		}
	}
}

// StartReasoning completes the open item, if any, and starts a reasoning item.
func (b *Builder) StartReasoning() error {
	return b.startItem(Item{Type: ItemReasoning, ID: NewID(PrefixReasoning), Summary: []ContentPart{}, Content: []ContentPart{}})
}

// StartFunctionCall completes the open item, if any, and starts a call of
// the named function (namespace is the namespace tool it belongs to, or "").
// The output_item.added event carries the name, as the spec asks, so the
// engine calls this once the name is parsed; a fresh call_id is assigned.
func (b *Builder) StartFunctionCall(name, namespace string) error {
	return b.startItem(Item{Type: ItemFunctionCall, ID: NewID(PrefixFunctionCall), CallID: NewID(PrefixCallID), Name: name, Namespace: namespace})
}

// StartCustomToolCall completes the open item, if any, and starts a call of
// a custom tool; ArgumentsDelta then appends its raw input. The schema has
// neither this item type nor events for its input: they are OpenAI's.
func (b *Builder) StartCustomToolCall(name string) error {
	return b.startItem(Item{Type: ItemCustomToolCall, ID: NewID(PrefixCustomToolCall), CallID: NewID(PrefixCallID), Name: name})
}

// StartItemFrom completes the open item, if any, and starts an item with the identity
// of a stored one: its type, id, and call_id, name and namespace for a call (a message's
// phase too). The deltas that follow fill it in. Replaying a stored response through a
// Builder this way gives the client the ids it saw live, so a call_id it answers from a
// replay matches the stored call.
func (b *Builder) StartItemFrom(stored Item) error {
	it := Item{Type: stored.Type, ID: stored.ID}
	switch stored.Type {
	case ItemMessage:
		it.Role, it.Phase, it.Content = RoleAssistant, stored.Phase, []ContentPart{}
	case ItemReasoning:
		it.Summary, it.Content = []ContentPart{}, []ContentPart{}
	case ItemFunctionCall:
		it.CallID, it.Name, it.Namespace = stored.CallID, stored.Name, stored.Namespace
	case ItemCustomToolCall:
		it.CallID, it.Name = stored.CallID, stored.Name
	default:
		return fmt.Errorf("hearth: cannot start a %s item", stored.Type)
	}
	return b.startItem(it)
}

func (b *Builder) startItem(it Item) error {
	if err := b.begin(); err != nil {
		return err
	}
	b.setPhase(it.Type)
	b.closeItem(StatusCompleted)
	if b.lastIncomplete {
		return fmt.Errorf("hearth: cannot start a %s item after an incomplete item", it.Type)
	}
	it.Status = StatusInProgress
	b.resp.Output = append(b.resp.Output, it)
	b.cur = len(b.resp.Output) - 1
	b.partOpen = false
	if k := itemTypes[it.Type]; k != nil && k.AddedAtEnd {
		// Its id may depend on its arguments, which no event streams: the item
		// is added whole when it ends.
		b.addedLate = true
		return nil
	}
	b.send(Event{Type: EventOutputItemAdded, OutputIndex: b.cur, Item: b.snapshot()})
	return nil
}

// TextDelta appends assistant text, starting a message (and its output_text
// part) if none is open.
func (b *Builder) TextDelta(text string) error {
	return b.messageDelta(PartOutputText, text, nil)
}

// TextDeltaLogprobs is TextDelta with the log probabilities of the delta's tokens: they
// go out with the delta event and are kept in the part's logprobs. A nil lps is
// TextDelta; an empty one says the delta has none (its tokens were counted elsewhere).
func (b *Builder) TextDeltaLogprobs(text string, lps []LogProb) error {
	if text == "" && len(lps) > 0 {
		// Tokens with no text left (the parser dropped theirs) still belong to
		// the part: they are kept and shown with the part, not as an empty delta.
		if b.cur >= 0 && b.partOpen && b.resp.Output[b.cur].Type == ItemMessage {
			it := &b.resp.Output[b.cur]
			if ci := len(it.Content) - 1; it.Content[ci].Type == PartOutputText {
				it.Content[ci].Logprobs = append(it.Content[ci].Logprobs, lps...)
			}
		}
		return nil
	}
	return b.messageDelta(PartOutputText, text, lps)
}

// RefusalDelta appends refusal text to the open message, in a refusal part.
func (b *Builder) RefusalDelta(text string) error {
	return b.messageDelta(PartRefusal, text, nil)
}

func (b *Builder) messageDelta(partType, text string, lps []LogProb) error {
	if text == "" {
		return b.begin()
	}
	if err := b.ensureItem(ItemMessage); err != nil {
		return err
	}
	it := &b.resp.Output[b.cur]
	if b.partOpen && it.Content[len(it.Content)-1].Type != partType {
		b.closePart()
	}
	if !b.partOpen {
		it.Content = append(it.Content, ContentPart{Type: partType})
		b.partOpen = true
		part := it.Content[len(it.Content)-1]
		b.send(Event{Type: EventContentPartAdded, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: len(it.Content) - 1, Part: &part})
	}
	ci := len(it.Content) - 1
	if partType == PartRefusal {
		appendText(&b.partText, &it.Content[ci].Refusal, text)
		b.send(Event{Type: EventRefusalDelta, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Delta: text})
	} else {
		appendText(&b.partText, &it.Content[ci].Text, text)
		if lps != nil {
			it.Content[ci].Logprobs = append(it.Content[ci].Logprobs, lps...)
		}
		b.send(Event{Type: EventOutputTextDelta, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Delta: text, Logprobs: lps})
	}
	return nil
}

// ReasoningDelta appends raw reasoning text, starting a reasoning item if
// none is open. When the request asked for reasoning.summary the same text
// also fills the summary: hearth has no separate summariser, and OpenAI's
// clients (Codex, the SDKs) show summaries but not response.reasoning.*.
func (b *Builder) ReasoningDelta(text string) error {
	if text == "" {
		return b.begin()
	}
	if err := b.ensureItem(ItemReasoning); err != nil {
		return err
	}
	it := &b.resp.Output[b.cur]
	if !b.partOpen {
		// The summary part opens first and closes last (closePart), so the raw
		// reasoning part nests inside it: a client that reads only summaries sees
		// what OpenAI's reasoning models send (output_item.added, then
		// reasoning_summary_part.added, its deltas, its .done events), and each
		// summary delta follows the raw delta it mirrors.
		if b.mirrorSummary {
			it.Summary = append(it.Summary, ContentPart{Type: PartSummaryText})
			part := it.Summary[len(it.Summary)-1]
			b.send(Event{Type: EventReasoningSummaryPartAdded, ItemID: it.ID, OutputIndex: b.cur, SummaryIndex: len(it.Summary) - 1, Part: &part})
		}
		it.Content = append(it.Content, ContentPart{Type: PartReasoningText})
		part := it.Content[len(it.Content)-1]
		b.send(Event{Type: EventContentPartAdded, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: len(it.Content) - 1, Part: &part})
		b.partOpen = true
	}
	ci := len(it.Content) - 1
	appendText(&b.partText, &it.Content[ci].Text, text)
	b.send(Event{Type: EventReasoningDelta, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Delta: text})
	if b.mirrorSummary {
		si := len(it.Summary) - 1
		appendText(&b.summaryText, &it.Summary[si].Text, text)
		b.send(Event{Type: EventReasoningSummaryTextDelta, ItemID: it.ID, OutputIndex: b.cur, SummaryIndex: si, Delta: text})
	}
	return nil
}

// SetEncryptedContent sets encrypted_content on the open reasoning item
// (when the request included reasoning.encrypted_content, hearth's stand-in
// lets a stateless client hand the reasoning back).
func (b *Builder) SetEncryptedContent(s string) error {
	if b.state == stateFinished {
		return ErrFinished
	}
	if b.cur < 0 || b.resp.Output[b.cur].Type != ItemReasoning {
		return fmt.Errorf("hearth: SetEncryptedContent with no reasoning item open")
	}
	b.resp.Output[b.cur].EncryptedContent = s
	return nil
}

// ArgumentsDelta appends to the open function call's arguments (JSON text)
// or custom tool call's input (raw text).
func (b *Builder) ArgumentsDelta(text string) error {
	if b.state == stateFinished {
		return ErrFinished
	}
	if b.cur < 0 {
		return fmt.Errorf("hearth: ArgumentsDelta with no tool call open")
	}
	it := &b.resp.Output[b.cur]
	switch it.Type {
	case ItemFunctionCall:
		if text != "" {
			appendText(&b.argsText, &it.Arguments, text)
			b.send(Event{Type: EventFunctionCallArgumentsDelta, ItemID: it.ID, OutputIndex: b.cur, Delta: text})
		}
	case ItemCustomToolCall:
		if text != "" {
			appendText(&b.argsText, &it.Input, text)
			b.send(Event{Type: EventCustomToolCallInputDelta, ItemID: it.ID, OutputIndex: b.cur, Delta: text})
		}
	default:
		k := itemTypes[it.Type]
		if k == nil || !k.Arguments {
			return fmt.Errorf("hearth: ArgumentsDelta while a %s item is open", it.Type)
		}
		// A kind's item carries the model's arguments (a search's query, in its
		// own fields later); they stream as the kind's own event, when it has one.
		if k.ArgumentsEvent == "" {
			it.Arguments += text
		} else if text != "" {
			it.Arguments += text
			b.send(Event{Type: k.ArgumentsEvent, ItemID: it.ID, OutputIndex: b.cur, Delta: text})
		}
	}
	return nil
}

// EndItem closes the open item with status completed or incomplete. An
// incomplete item must be the last: only Incomplete or Fail may follow.
func (b *Builder) EndItem(status string) error {
	if b.state == stateFinished {
		return ErrFinished
	}
	if status != StatusCompleted && status != StatusIncomplete {
		return fmt.Errorf("hearth: item status %q is not completed or incomplete", status)
	}
	if b.cur < 0 {
		return fmt.Errorf("hearth: EndItem with no item open")
	}
	b.closeItem(status)
	return nil
}

// Complete ends the response as completed: the open item is completed and
// response.completed carries the final response.
func (b *Builder) Complete(usage Usage) error {
	if err := b.begin(); err != nil {
		return err
	}
	if b.lastIncomplete {
		return fmt.Errorf("hearth: a response with an incomplete item cannot complete")
	}
	b.closeItem(StatusCompleted)
	now := b.Now().Unix()
	b.resp.CompletedAt = &now
	b.finish(StatusCompleted, &usage)
	b.send(Event{Type: EventResponseCompleted, Response: b.resp.Clone()})
	return nil
}

// StoppedAt records the request's stop string that ended the output, before Complete.
func (b *Builder) StoppedAt(stop string) { b.resp.StopSequence = stop }

// Incomplete ends the response as incomplete for reason (an Incomplete
// constant, such as IncompleteMaxOutputTokens); the open item, if any, ends
// incomplete.
func (b *Builder) Incomplete(reason string, usage Usage) error {
	if err := b.begin(); err != nil {
		return err
	}
	b.closeItem(StatusIncomplete)
	b.resp.IncompleteDetails = &IncompleteDetails{Reason: reason}
	b.finish(StatusIncomplete, &usage)
	b.send(Event{Type: EventResponseIncomplete, Response: b.resp.Clone()})
	return nil
}

// Fail ends the response as failed: the open item, if any, ends incomplete,
// an error event carries err, and response.failed carries the response with
// its error set (the spec: an error while streaming is followed by
// response.failed). usage may be nil when nothing was counted.
func (b *Builder) Fail(err *Error, usage *Usage) error {
	if e := b.begin(); e != nil {
		return e
	}
	if err == nil {
		err = ServerError("The response failed.")
	}
	b.closeItem(StatusIncomplete)
	code := err.Code
	if code == "" {
		code = err.Type
	}
	b.resp.Error = &ResponseError{Code: code, Message: err.Message}
	b.finish(StatusFailed, usage)
	b.send(Event{Type: EventError, Error: err})
	b.send(Event{Type: EventResponseFailed, Response: b.resp.Clone()})
	return nil
}

func (b *Builder) finish(status string, usage *Usage) {
	if usage == nil && b.spent != (Usage{}) {
		usage = &Usage{}
	}
	if usage != nil {
		u := addUsage(*usage, b.spent)
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
		b.resp.Usage = &u
	}
	b.resp.Status = status
	b.state = stateFinished
}

// begin starts the response implicitly and refuses calls after the end.
func (b *Builder) begin() error {
	if b.state == stateFinished {
		return ErrFinished
	}
	if b.state != stateInProgress {
		return b.Start()
	}
	return nil
}

func (b *Builder) ensureItem(typ string) error {
	if err := b.begin(); err != nil {
		return err
	}
	if b.cur >= 0 && b.resp.Output[b.cur].Type == typ {
		return nil
	}
	if typ == ItemMessage {
		return b.StartMessage()
	}
	return b.StartReasoning()
}

// closePart ends the open item's streaming part with its .done events.
func (b *Builder) closePart() {
	if !b.partOpen {
		return
	}
	b.partOpen = false
	it := &b.resp.Output[b.cur]
	ci := len(it.Content) - 1
	part := it.Content[ci]
	switch part.Type {
	case PartOutputText:
		if len(b.citers) > 0 {
			// The answer cites what the response's hosted tools found (each kind
			// says what of it the text names), as OpenAI does.
			var found []Annotation
			for _, c := range b.citers {
				found = append(found, c.Cite(part.Text)...)
			}
			for _, a := range found {
				ai := len(part.Annotations)
				part.Annotations = append(part.Annotations, a)
				b.send(Event{Type: EventOutputTextAnnotationAdded, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, AnnotationIndex: ai, Annotation: &a})
			}
			it.Content[ci] = part
		}
		b.send(Event{Type: EventOutputTextDone, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Text: part.Text, Logprobs: part.Logprobs})
	case PartRefusal:
		b.send(Event{Type: EventRefusalDone, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Refusal: part.Refusal})
	case PartReasoningText:
		b.send(Event{Type: EventReasoningDone, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Text: part.Text})
	}
	b.send(Event{Type: EventContentPartDone, ItemID: it.ID, OutputIndex: b.cur, ContentIndex: ci, Part: &part})
	if it.Type == ItemReasoning && b.mirrorSummary && len(it.Summary) > 0 {
		si := len(it.Summary) - 1
		sp := it.Summary[si]
		b.send(Event{Type: EventReasoningSummaryTextDone, ItemID: it.ID, OutputIndex: b.cur, SummaryIndex: si, Text: sp.Text})
		b.send(Event{Type: EventReasoningSummaryPartDone, ItemID: it.ID, OutputIndex: b.cur, SummaryIndex: si, Part: &sp})
	}
}

// closeItem ends the open item, if any, with status.
func (b *Builder) closeItem(status string) {
	if b.cur < 0 {
		return
	}
	b.closePart()
	b.setPhase("")
	it := &b.resp.Output[b.cur]
	if it.Type == ItemReasoning && b.Seal != nil {
		it.EncryptedContent = b.Seal(it.Clone())
	}
	switch it.Type {
	case ItemFunctionCall:
		b.send(Event{Type: EventFunctionCallArgumentsDone, ItemID: it.ID, OutputIndex: b.cur, Arguments: it.Arguments})
	case ItemCustomToolCall:
		b.send(Event{Type: EventCustomToolCallInputDone, ItemID: it.ID, OutputIndex: b.cur, Input: it.Input})
	default:
		if k := itemTypes[it.Type]; k != nil && k.Close != nil {
			k.Close(b, it, status)
		}
	}
	if b.addedLate {
		b.send(Event{Type: EventOutputItemAdded, OutputIndex: b.cur, Item: b.snapshot()})
		b.addedLate = false
	}
	it.Status = status
	b.send(Event{Type: EventOutputItemDone, OutputIndex: b.cur, Item: b.snapshot()})
	if status == StatusIncomplete {
		b.lastIncomplete = true
	}
	b.cur = -1
}

// appendText appends text to *field, which buf has grown so far. Go strings are
// immutable, so `*field += text` copies the whole field for every delta: quadratic in an
// item's length (a 10,000-token message allocated 265 MB). buf grows geometrically and
// its String() shares the buffer without a copy; the strings handed out earlier stay
// valid, as a strings.Builder only ever appends. A field buf did not grow (a new part,
// or text set otherwise) starts buf over from the field's text.
func appendText(buf *strings.Builder, field *string, text string) {
	if buf.Len() != len(*field) || buf.String() != *field {
		buf.Reset()
		buf.WriteString(*field)
	}
	buf.WriteString(text)
	*field = buf.String()
}

func (b *Builder) snapshot() *Item {
	it := b.resp.Output[b.cur].Clone()
	return &it
}

func (b *Builder) send(e Event) {
	e.SequenceNumber = b.seq
	b.seq++
	if b.emit != nil {
		b.emit(e)
	}
}
