package anthropic

import (
	"cmp"
	"encoding/json"
	"strings"

	"hearth"
)

// messageJSON is a Messages response.
type messageJSON struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []block   `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        usageJSON `json:"usage"`
}

// block is one content block, of the response or of a content_block_start event.
type block struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text,omitempty"`
	// thinking
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type usageJSON struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// messageID is the message id of hearth's response id: the same random part, so a
// message is found by its id in the logs and the console.
func messageID(responseID string) string {
	return "msg_" + strings.TrimPrefix(responseID, hearth.PrefixResponse+"_")
}

// usageOf is Anthropic's usage: input_tokens are the prompt tokens the runtime
// evaluated, cache_read_input_tokens those its KV cache held (their sum is the
// prompt's count_tokens).
func usageOf(u *hearth.Usage) usageJSON {
	if u == nil {
		return usageJSON{}
	}
	cached := u.InputTokensDetails.CachedTokens
	return usageJSON{InputTokens: u.InputTokens - cached, OutputTokens: u.OutputTokens, CacheReadInputTokens: cached}
}

// stopReason is the response's stop_reason: max_tokens when the budget cut it,
// stop_sequence when one of the request's stop_sequences ended it, tool_use when it
// ends in calls for the client, end_turn otherwise.
func stopReason(r *hearth.Response) string {
	if r.StopSequence != "" {
		return "stop_sequence"
	}
	if r.Status == hearth.StatusIncomplete {
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == hearth.IncompleteMaxOutputTokens {
			return "max_tokens"
		}
		return "end_turn"
	}
	for _, it := range r.Output {
		if it.Type == hearth.ItemFunctionCall {
			return "tool_use"
		}
	}
	return "end_turn"
}

// stopSequence is the response's stop_sequence: the one that ended it, or null.
func stopSequence(r *hearth.Response) *string {
	if r.StopSequence == "" {
		return nil
	}
	return ptr(r.StopSequence)
}

func ptr[T any](v T) *T { return &v }

// arguments is a call's arguments as the input object (an empty call's is {}).
func arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" || !json.Valid([]byte(s)) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(s)
}

// reasoningText is a reasoning item's thinking text.
func reasoningText(it *hearth.Item) string {
	var b strings.Builder
	for _, p := range it.Content {
		b.WriteString(p.Text)
	}
	if b.Len() == 0 {
		for _, p := range it.Summary {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// encodeMessage maps a final response to a Messages response: reasoning to thinking
// blocks (the signature is the sealed reasoning), message text to text blocks, calls
// to tool_use blocks. Hosted tool calls hearth ran (tool_search) are not shown.
func encodeMessage(r *hearth.Response, model string, d *decoded) messageJSON {
	m := messageJSON{ID: messageID(r.ID), Type: "message", Role: "assistant", Model: cmp.Or(r.Model, model),
		Content: []block{}, StopReason: ptr(stopReason(r)), StopSequence: stopSequence(r), Usage: usageOf(r.Usage)}
	for i := range r.Output {
		it := &r.Output[i]
		switch it.Type {
		case hearth.ItemReasoning:
			text := reasoningText(it)
			if d.omitThinking {
				text = ""
			}
			m.Content = append(m.Content, block{Type: "thinking", Thinking: ptr(text), Signature: ptr(it.EncryptedContent)})
		case hearth.ItemMessage:
			for _, p := range it.Content {
				t := p.Text
				if p.Type == hearth.PartRefusal {
					t = p.Refusal
				}
				m.Content = append(m.Content, block{Type: "text", Text: ptr(t)})
			}
		case hearth.ItemFunctionCall:
			m.Content = append(m.Content, block{Type: "tool_use", ID: it.CallID, Name: it.Name, Input: arguments(it.Arguments)})
		}
	}
	return m
}
