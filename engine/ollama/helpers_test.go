package ollama

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"testing"

	"hearth"
)

// Item constructors keep the tables readable (as in the engine's own tests).

func itPart(typ, s string) hearth.ContentPart { return hearth.ContentPart{Type: typ, Text: s} }

func itMsg(role string, parts ...hearth.ContentPart) hearth.Item {
	return hearth.Item{Type: hearth.ItemMessage, Role: role, Content: parts}
}

func itUser(s string) hearth.Item { return itMsg(hearth.RoleUser, itPart(hearth.PartInputText, s)) }
func itAssistant(s string) hearth.Item {
	return itMsg(hearth.RoleAssistant, itPart(hearth.PartOutputText, s))
}
func itDeveloper(s string) hearth.Item {
	return itMsg(hearth.RoleDeveloper, itPart(hearth.PartInputText, s))
}

func itReasoning(s string) hearth.Item {
	return hearth.Item{Type: hearth.ItemReasoning, Summary: []hearth.ContentPart{}, Content: []hearth.ContentPart{itPart(hearth.PartReasoningText, s)}}
}

func itCall(id, name, args string) hearth.Item {
	return hearth.Item{Type: hearth.ItemFunctionCall, CallID: id, Name: name, Arguments: args}
}

func itOutput(id, s string) hearth.Item {
	return hearth.Item{Type: hearth.ItemFunctionCallOutput, CallID: id, Output: hearth.ToolOutput{Text: s}}
}

func testFunctionTool(name, params string) hearth.Tool {
	return hearth.Tool{Type: hearth.ToolFunction, Name: name, Description: name + " does things", Parameters: json.RawMessage(params)}
}

// testPNG returns a tiny valid PNG; its colour makes images distinguishable.
func testPNG(t testing.TB, shade uint8) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.Gray{Y: shade})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testDataURL(b []byte) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
}
