package ollama

import (
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

// For the external tests (prompt_parity_test.go), which run on the real runtime
// through testenv and so cannot be in package ollama: testenv imports this package.
const (
	Qwen3ParityTemplate   = qwen3ParityTemplate
	Llama31ParityTemplate = llama31ParityTemplate
	LegacyParityTemplate  = legacyParityTemplate
)

var ItCall = itCall
var ItOutput = itOutput
var ItReasoning = itReasoning
var ItUser = itUser
var TestDataURL = testDataURL
var TestFunctionTool = testFunctionTool
var TestPNG = testPNG
var ItAssistant = itAssistant
var ItDeveloper = itDeveloper
var ItMsg = itMsg
var ItPart = itPart

// ChatMessages returns conv as the /api/chat request of the same conversation holds it.
func ChatMessages(t testing.TB, conv *engine.Conversation) ([]api.Message, api.Tools) {
	t.Helper()
	msgs, err := appendMessages(nil, conv.Messages)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := apiTools(conv.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return msgs, tools
}

// JinjaRegistered lists the renderer names registered with the module's registry as
// their family's Jinja template.
func JinjaRegistered() []string { return jinjaRegistered }

// ShowOf is the model description the seam's Model renders with: /api/show's, with what
// the seam added (the GGUF's chat template, capabilities of the format).
func ShowOf(info *engine.ModelInfo) *api.ShowResponse { return info.Prompt.(renderer).show }
