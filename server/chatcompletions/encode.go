package chatcompletions

import (
	"strings"

	"hearth"
)

// SystemFingerprint is the system_fingerprint of every completion: hearth's, so a
// client can tell it from the runtime's own Chat Completions handler.
const SystemFingerprint = "fp_hearth"

// chatCompletion is a chat.completion object.
type chatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []choice `json:"choices"`
	Usage             *usage   `json:"usage"`
	ServiceTier       string   `json:"service_tier"`
	SystemFingerprint string   `json:"system_fingerprint"`
}

type choice struct {
	Index        int       `json:"index"`
	Message      message   `json:"message"`
	Logprobs     *logprobs `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type message struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
	// ReasoningContent is the model's reasoning, where vLLM, DeepSeek and Ollama's
	// clients read it.
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	Annotations      []any      `json:"annotations"`
}

type toolCall struct {
	// Index is set in stream deltas only.
	Index    *int          `json:"index,omitempty"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function *functionCall `json:"function,omitempty"`
	Custom   *customCall   `json:"custom,omitempty"`
}

type functionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type customCall struct {
	Name  string `json:"name,omitempty"`
	Input string `json:"input"`
}

type logprobs struct {
	Content []tokenLogprob `json:"content"`
	Refusal []tokenLogprob `json:"refusal"`
}

type tokenLogprob struct {
	Token       string              `json:"token"`
	Logprob     float64             `json:"logprob"`
	Bytes       []int               `json:"bytes"`
	TopLogprobs []hearth.TopLogProb `json:"top_logprobs"`
}

type usage struct {
	PromptTokens            int           `json:"prompt_tokens"`
	CompletionTokens        int           `json:"completion_tokens"`
	TotalTokens             int           `json:"total_tokens"`
	PromptTokensDetails     promptDetails `json:"prompt_tokens_details"`
	CompletionTokensDetails outputDetails `json:"completion_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

type outputDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// completionID is the chat completion id of hearth response id: the same random
// part, so the one is found from the other.
func completionID(responseID string) string {
	return "chatcmpl-" + strings.TrimPrefix(responseID, "resp_")
}

// completion is the chat.completion of a final response.
func completion(r *hearth.Response, withLogprobs bool) chatCompletion {
	msg := message{Role: "assistant", Annotations: []any{}}
	var content, refusal, reasoning strings.Builder
	var lps []tokenLogprob
	for _, it := range r.Output {
		switch it.Type {
		case hearth.ItemMessage:
			for _, p := range it.Content {
				switch p.Type {
				case hearth.PartOutputText:
					content.WriteString(p.Text)
					lps = append(lps, chatLogprobs(p.Logprobs)...)
				case hearth.PartRefusal:
					refusal.WriteString(p.Refusal)
				}
			}
		case hearth.ItemReasoning:
			reasoning.WriteString(reasoningText(&it))
		case hearth.ItemFunctionCall:
			msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: it.CallID, Type: "function",
				Function: &functionCall{Name: it.Name, Arguments: it.Arguments}})
		case hearth.ItemCustomToolCall:
			msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: it.CallID, Type: "custom",
				Custom: &customCall{Name: it.Name, Input: it.Input}})
		}
	}
	// Content is null only for a message of tool calls alone, as OpenAI writes it.
	if s := content.String(); s != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &s
	}
	if s := refusal.String(); s != "" {
		msg.Refusal = &s
	}
	if s := reasoning.String(); s != "" {
		msg.ReasoningContent = &s
	}
	ch := choice{Message: msg, FinishReason: finishReason(r, len(msg.ToolCalls) > 0)}
	if withLogprobs {
		if lps == nil {
			lps = []tokenLogprob{}
		}
		ch.Logprobs = &logprobs{Content: lps}
	}
	return chatCompletion{ID: completionID(r.ID), Object: "chat.completion", Created: r.CreatedAt, Model: r.Model,
		Choices: []choice{ch}, Usage: chatUsage(r.Usage), ServiceTier: "default", SystemFingerprint: SystemFingerprint}
}

// reasoningText is a reasoning item's text: its reasoning text, else its summary.
func reasoningText(it *hearth.Item) string {
	if s := it.Text(hearth.PartReasoningText); s != "" {
		return s
	}
	var b strings.Builder
	for _, p := range it.Summary {
		b.WriteString(p.Text)
	}
	return b.String()
}

// finishReason is how the choice ended: a response cut by its budget (or anything
// else that left it incomplete) is "length", one cut by a filter "content_filter";
// a finished one ends in "tool_calls" when it calls tools, else "stop".
func finishReason(r *hearth.Response, calls bool) string {
	if r.Status == hearth.StatusIncomplete {
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == hearth.IncompleteContentFilter {
			return "content_filter"
		}
		return "length"
	}
	if calls {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(u *hearth.Usage) *usage {
	if u == nil {
		return nil
	}
	return &usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens,
		PromptTokensDetails:     promptDetails{CachedTokens: u.InputTokensDetails.CachedTokens},
		CompletionTokensDetails: outputDetails{ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}}
}

func chatLogprobs(lps []hearth.LogProb) []tokenLogprob {
	out := make([]tokenLogprob, 0, len(lps))
	for _, lp := range lps {
		top := lp.TopLogprobs
		if top == nil {
			top = []hearth.TopLogProb{}
		}
		out = append(out, tokenLogprob{Token: lp.Token, Logprob: lp.Logprob, Bytes: lp.Bytes, TopLogprobs: top})
	}
	return out
}
