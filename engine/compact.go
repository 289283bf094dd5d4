package engine

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"hearth"
)

// CodeNothingToCompact: a compaction request whose conversation has nothing the
// compaction would replace.
const CodeNothingToCompact = "nothing_to_compact"

// CompactionPrompt is the user message, after the whole conversation, that asks the
// model for the summary a compaction item carries.
const CompactionPrompt = "The conversation above is about to be compacted: it will be replaced by a summary " +
	"that you write now, and continue from there. The system and developer instructions and the user's " +
	"latest message are kept as they are. Write the summary: the user's goals and requests, what has been " +
	"done and found so far (decisions, facts, names of files, commands and tool results that matter), and " +
	"what remains to do, so that the work can go on from the summary alone. Write only the summary."

// Compaction is a prepared compaction of a conversation: the generation of its summary
// and the items the compacted window keeps as they are.
//
// The rule: system and developer messages (standing instructions, which a summary
// would weaken) and the last user message (the request being worked on, in the user's
// own words) are kept verbatim, in their order. Everything else (earlier user turns,
// assistant messages, reasoning, tool calls and their outputs, earlier compaction
// items) is what the model summarises into one compaction item, which follows the
// kept items: the compacted window reads as the instructions, the request, then the
// summary of all that happened, as in the schema's example. The summary is asked of
// the model with the whole conversation in view (its own prompt, prefix-stable, plus
// CompactionPrompt), without tools.
type Compaction struct {
	// Observe, when set, sees the summary's events as they are generated, as a
	// response's emit does (the server times the first token with it).
	Observe func(hearth.Event)

	// Fallback is set by Run when the model wrote no summary and the compaction item
	// carries FallbackSummary's text instead.
	Fallback bool

	e    *Engine
	job  *Job
	kept []hearth.Item
	// replaced are the items the compaction item stands for, sealed content opened:
	// what a fallback summary is made of.
	replaced []hearth.Item
	// whole: the item stands for the whole conversation before it and carries the
	// kept items (server-side compaction, sealedCompaction.Whole).
	whole bool
}

// PrepareCompaction checks a compaction request (the create fields that apply: model,
// input, instructions, previous_response_id through history, reasoning, sampling,
// max_output_tokens, truncation) and renders the summarising prompt. A conversation
// with nothing to summarise is a 400. Truncation defaults to "auto" here: a
// conversation compacted because it nearly fills the window may not fit with the
// summary request added, and its oldest turns matter least.
func (e *Engine) PrepareCompaction(ctx context.Context, req *hearth.CreateResponseRequest, history []hearth.Item, inputs Inputs) (*Compaction, error) {
	if err := checkCallIDs(history, req.Input); err != nil {
		return nil, err
	}
	// An earlier compaction item stands for what came before it.
	history, input, _ := e.cutAtCompaction(history, req.Input)
	h, in, err := e.openSealed(history, input)
	if err != nil {
		return nil, err
	}
	// Hosted tools' items are summarised as the calls and results they were.
	h, in = e.hostedAsCalls(h, in)
	// Validated here, where an error can still name the item the caller knows.
	if _, err := BuildConversation(req.Instructions, h, in, nil, nil); err != nil {
		return nil, err
	}

	window := append(append([]hearth.Item(nil), history...), input...)
	lastUser := -1
	for i, it := range window {
		if it.Type == hearth.ItemMessage && it.Role == hearth.RoleUser {
			lastUser = i
		}
	}
	c := &Compaction{e: e}
	for i, it := range window {
		if i == lastUser || it.Type == hearth.ItemMessage && (it.Role == hearth.RoleSystem || it.Role == hearth.RoleDeveloper) {
			c.kept = append(c.kept, keptItem(it))
		}
	}
	if len(c.kept) == len(window) {
		return nil, hearth.InvalidRequest("input", CodeNothingToCompact,
			"Nothing to compact: compaction keeps system and developer messages and the last user message as they are, "+
				"and the conversation has nothing else.")
	}

	opened := append(append([]hearth.Item(nil), h...), in...)
	// opened need not match window item for item (hosted items become calls and
	// results): the kept user message is found again as the last with its text.
	keptUser := -1
	for i, it := range opened {
		if lastUser >= 0 && it.Type == hearth.ItemMessage && it.Role == hearth.RoleUser && it.Text() == window[lastUser].Text() {
			keptUser = i
		}
	}
	for i, it := range opened {
		if i == keptUser || it.Type == hearth.ItemMessage && (it.Role == hearth.RoleSystem || it.Role == hearth.RoleDeveloper) {
			continue
		}
		c.replaced = append(c.replaced, it)
	}
	sum := &hearth.CreateResponseRequest{
		Model:        req.Model,
		Instructions: req.Instructions,
		Input: append(opened, hearth.Item{Type: hearth.ItemMessage, Role: hearth.RoleUser,
			Content: []hearth.ContentPart{{Type: hearth.PartInputText, Text: CompactionPrompt}}}),
		MaxOutputTokens:  req.MaxOutputTokens,
		Temperature:      req.Temperature,
		TopP:             req.TopP,
		PresencePenalty:  req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty,
		Reasoning:        req.Reasoning,
		Truncation:       cmp.Or(req.Truncation, hearth.TruncationAuto),
	}
	// Not Prepare: its input holds compaction items opened into messages, so the
	// calls they stood for can no longer be seen; the window was checked above.
	if c.job, err = e.prepare(ctx, sum, nil, inputs); err != nil {
		return nil, err
	}
	return c, nil
}

// Prompt is the exact summarising prompt sent to the runtime.
func (c *Compaction) Prompt() string { return c.job.Prompt }

// keptItem is an item of the compacted window as the output lists it: output items
// need an id and a status, which input messages may lack.
func keptItem(it hearth.Item) hearth.Item {
	it = it.Clone()
	if it.ID == "" {
		it.ID = hearth.NewID(hearth.PrefixMessage)
	}
	if it.Status == "" {
		it.Status = hearth.StatusCompleted
	}
	return it
}

// Run generates the summary and returns the compacted window (the kept items, then
// the compaction item) with the usage of the generation. A summary cut by
// max_output_tokens is still a summary; a failed generation is an error. A model that
// wrote no text (only reasoning, only a call it was not offered, or nothing before
// max_output_tokens ran out) is no fault of the client's, and compaction is what lets
// its conversation go on: the item then carries FallbackSummary, and Fallback is set.
func (c *Compaction) Run(ctx context.Context) ([]hearth.Item, hearth.Usage, error) {
	resp := hearth.NewResponse(hearth.NewID(hearth.PrefixResponse), c.job.req, time.Now())
	b := hearth.NewBuilder(resp, c.Observe)
	runErr := c.job.Run(ctx, b)
	final := b.Response()
	var usage hearth.Usage
	if final.Usage != nil {
		usage = *final.Usage
	}
	if err := ctx.Err(); err != nil {
		return nil, usage, err
	}
	if final.Status == hearth.StatusFailed {
		e := &hearth.Error{Status: http.StatusInternalServerError, Type: hearth.ErrTypeModel, Code: hearth.CodeModelError,
			Message: "The summary could not be generated."}
		if final.Error != nil {
			e.Message = "The summary could not be generated: " + final.Error.Message
			if final.Error.Code == hearth.CodeServerError {
				e.Type, e.Code = hearth.ErrTypeServer, hearth.CodeServerError
			}
		}
		return nil, usage, e
	}
	var summary strings.Builder
	for _, it := range final.Output {
		if it.Type == hearth.ItemMessage {
			summary.WriteString(it.Text(hearth.PartOutputText))
		}
	}
	text := strings.TrimSpace(summary.String())
	if text == "" {
		var wrote []string
		for _, it := range final.Output {
			wrote = append(wrote, it.Type)
		}
		c.e.log.Warn("compaction: the model wrote no summary; the compaction item carries the conversation's latest items instead",
			"model", c.job.req.Model, "status", final.Status, "output", wrote, "error", runErr)
		text, c.Fallback = FallbackSummary(c.replaced), true
	}
	payload := sealedCompaction{Summary: text}
	if c.whole {
		payload.Whole, payload.Kept = true, c.kept
	}
	out := append(c.kept, hearth.Item{Type: hearth.ItemCompaction, ID: hearth.NewID(hearth.PrefixCompaction),
		EncryptedContent: c.e.sealCompaction(payload)})
	return out, usage, nil
}

// FallbackNote opens the summary of a compaction whose model wrote none: what follows
// it is not a summary but the latest items of the conversation it replaces, verbatim
// (bounded), which is what a later turn most needs of it.
const FallbackNote = "[hearth: the model wrote no summary. What follows are the latest items of the conversation this replaces, as they were; earlier ones are left out.]"

// Bounds of a fallback summary: the latest items, each cut to a length, so that it
// stays well below what compaction was asked to save.
const (
	fallbackItems    = 8
	fallbackItemText = 1000 // characters of one item's text
)

// FallbackSummary is the summary of a compaction whose model wrote none: FallbackNote,
// then the last fallbackItems of replaced that show text, one per line as
// "role: text", "call name(arguments)" or "result: output".
func FallbackSummary(replaced []hearth.Item) string {
	var lines []string
	for i := len(replaced) - 1; i >= 0 && len(lines) < fallbackItems; i-- {
		it := &replaced[i]
		var line string
		switch it.Type {
		case hearth.ItemMessage:
			if t := strings.TrimSpace(it.Text()); t != "" {
				line = it.Role + ": " + cutText(t)
			}
		case hearth.ItemFunctionCall, hearth.ItemCustomToolCall:
			args := it.Arguments
			if it.Type == hearth.ItemCustomToolCall {
				args = it.Input
			}
			line = "call " + it.Name + "(" + cutText(args) + ")"
		case hearth.ItemFunctionCallOutput, hearth.ItemCustomToolCallOutput:
			out := it.Output.Text
			for _, p := range it.Output.Parts {
				out += p.Text
			}
			if out = strings.TrimSpace(out); out != "" {
				line = "result: " + cutText(out)
			}
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	slices.Reverse(lines)
	return FallbackNote + "\n\n" + strings.Join(lines, "\n")
}

// cutText is s cut to fallbackItemText characters, marked when cut.
func cutText(s string) string {
	r := []rune(s)
	if len(r) <= fallbackItemText {
		return s
	}
	return string(r[:fallbackItemText]) + " [...]"
}
