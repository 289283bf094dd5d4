package chatcompletions

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"hearth"
)

// openAIError is he as OpenAI's Chat Completions answers it: the same
// {"error":{"message","type","param","code"}} body, with OpenAI's types (a missing
// model is an invalid_request_error there, a runtime's failure a server_error).
func openAIError(he *hearth.Error) *hearth.Error {
	e := *he
	switch e.Type {
	case hearth.ErrTypeNotFound:
		e.Type = hearth.ErrTypeInvalidRequest
	case hearth.ErrTypeModel:
		e.Type = hearth.ErrTypeServer
	case hearth.ErrTypeTooManyRequests:
		e.Type = "rate_limit_error"
	}
	if e.Status == 0 {
		e.Status = http.StatusInternalServerError
	}
	return &e
}

var inputPath = regexp.MustCompile(`^input\[(\d+)\](.*)$`)

// chatParam names a field of the hearth request the door built as the client wrote
// it in its Chat Completions body; paths are the messages the input items came from.
func chatParam(p string, paths []string) string {
	if m := inputPath.FindStringSubmatch(p); m != nil {
		i, _ := strconv.Atoi(m[1])
		if i >= len(paths) {
			return "messages"
		}
		base, rest := paths[i], m[2]
		switch {
		case strings.Contains(base, ".tool_calls["):
			for from, to := range map[string]string{".arguments": ".function.arguments", ".name": ".function.name", ".call_id": ".id"} {
				if strings.HasPrefix(rest, from) {
					return base + to + strings.TrimPrefix(rest, from)
				}
			}
			return base
		case strings.HasSuffix(base, ".reasoning_content"):
			return base
		}
		for from, to := range map[string]string{".output": ".content", ".call_id": ".tool_call_id"} {
			if strings.HasPrefix(rest, from) {
				return base + to + strings.TrimPrefix(rest, from)
			}
		}
		if strings.HasSuffix(rest, ".image_url") {
			rest += ".url"
		}
		return base + rest
	}
	switch {
	case p == "input":
		return "messages"
	case p == "max_output_tokens":
		return "max_completion_tokens"
	case p == "include" || strings.HasPrefix(p, "include["):
		return "logprobs"
	case p == "reasoning" || p == "reasoning.effort":
		return "reasoning_effort"
	case p == "text.verbosity":
		return "verbosity"
	case p == "text" || p == "text.format" || p == "text.format.type":
		return "response_format" + strings.TrimPrefix(p, "text.format")
	case strings.HasPrefix(p, "text.format."):
		return "response_format.json_schema." + strings.TrimPrefix(p, "text.format.")
	case p == "tool_choice.name":
		return "tool_choice.function.name"
	case p == "tool_choice.mode" || strings.HasPrefix(p, "tool_choice.tools"):
		return "tool_choice.allowed_tools." + strings.TrimPrefix(p, "tool_choice.")
	case strings.HasPrefix(p, "tools["):
		if i := strings.Index(p, "]."); i >= 0 && !strings.HasPrefix(p[i+2:], "type") {
			return p[:i+2] + "function." + p[i+2:]
		}
	}
	return p
}

// inChatTerms is he with its field named as the client wrote it.
func inChatTerms(he *hearth.Error, paths []string) *hearth.Error {
	if he.Param == "" {
		return he
	}
	e := *he
	e.Param = chatParam(he.Param, paths)
	if e.Param != he.Param {
		e.Message = strings.ReplaceAll(e.Message, "'"+he.Param+"'", "'"+e.Param+"'")
	}
	return &e
}
