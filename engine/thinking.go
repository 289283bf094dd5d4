package engine

import (
	"hearth/toolgrammar"
)

// applyThinking puts a family's thinking setting into the conversation (a soft switch
// on the last user message, a line in the system message) and returns the template's
// think value, nil when the request leaves it to the model.
func applyThinking(conv *Conversation, s toolgrammar.ThinkingSetting) *Think {
	if s.UserSuffix != "" {
		for i := len(conv.Messages) - 1; i >= 0; i-- {
			if conv.Messages[i].Role == "user" {
				conv.writable(i)
				conv.Messages[i].Content += s.UserSuffix
				break
			}
		}
	}
	if s.SystemLine != "" {
		conv.addSystemText(s.SystemLine)
	}
	switch {
	case s.Level != "":
		return &Think{Value: s.Level}
	case s.Think != nil:
		return &Think{Value: *s.Think}
	}
	return nil
}

// addSystemText appends text to the leading system message, or starts one.
func (c *Conversation) addSystemText(text string) {
	if text == "" {
		return
	}
	if len(c.Messages) > 0 && c.Messages[0].Role == "system" {
		c.writable(0)
		c.Messages[0].Content += "\n\n" + text
		return
	}
	c.Messages = append([]Message{{Role: "system", Content: text}}, c.Messages...)
	c.frozen = 0 // a new array
}

// resolveToolName maps the name the model wrote back to the request's tool: its name
// and namespace. A name the request did not offer comes back as written.
func (c *Conversation) resolveToolName(modelName string) (name, namespace string) {
	if ref, ok := c.ToolNames[modelName]; ok {
		return ref.Name, ref.Namespace
	}
	return modelName, ""
}

// toolgrammarTools lists the tools as the parser and schema builder take them.
func (c *Conversation) toolgrammarTools() []toolgrammar.Tool {
	tools := make([]toolgrammar.Tool, 0, len(c.Tools))
	for _, t := range c.Tools {
		tools = append(tools, toolgrammar.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return tools
}
