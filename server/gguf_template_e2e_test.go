package server_test

import (
	"testing"

	"hearth/scriptmodel"
)

// TestGGUFChatTemplateE2E: a model whose GGUF file carries a chat template
// (tokenizer.chat_template) is rendered from it, not from its Modelfile's Go template:
// the two end their prompts with different entry tokens, and the script model answers
// the GGUF template's. The template reads messages, tools (as tojson) and the tokenizer's
// BOS text from the file.
func TestGGUFChatTemplateE2E(t *testing.T) {
	const model = "hearth-script-gguf-template:latest"
	const jinja = "{{ bos_token }}{% if tools %}<tools>{{ tools | map(attribute='function.name') | join(',') }}</tools>{% endif %}" +
		"{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}" +
		"{% if add_generation_prompt %}<jinja-assistant>{% endif %}"
	spec := scriptmodel.Spec{
		Template:     "{{ range .Messages }}{{ .Content }}{{ end }}<go-assistant>",
		ChatTemplate: jinja,
		Stop:         []string{"</assistant>"},
		Scripts: []scriptmodel.Script{
			{Entry: "<go-assistant>", Text: "From the Modelfile template."},
			{Entry: "<jinja-assistant>", Text: "From the GGUF template."},
		},
	}
	_, srv := familyServer(t, model, spec)
	resp := createJSON(t, srv, reqBody(model, false, `"input":"Hi?","temperature":0,`+toolsJSON))
	sameItems(t, "GGUF template", resp.Output, []item{{Type: "message", Status: "completed", Text: "From the GGUF template."}})
}
