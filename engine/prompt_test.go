package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"hearth"
)

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

// pngClaiming is a small PNG whose header claims a w×h canvas: its IHDR chunk
// rewritten, with its checksum.
func pngClaiming(t testing.TB, w, h uint32) []byte {
	b := testPNG(t, 1)
	ihdr := b[8+8 : 8+8+13] // after the signature, the chunk's length and type
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	binary.BigEndian.PutUint32(b[8+8+13:], crc32.ChecksumIEEE(b[8+4:8+8+13]))
	return b
}

func testDataURL(b []byte) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
}

// Item constructors keep the tables readable.
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

// wantMsg is a message as JSON sees it: tool calls compare by their JSON, so
// the ordered arguments compare by content.
type wantMsg struct {
	Role, Content, Thinking, ToolName, ToolCallID string
	Calls                                         []string // `name {"json":"args"}`
	Images                                        int
}

func summarizeMessages(ms []Message) []wantMsg {
	var out []wantMsg
	for _, m := range ms {
		w := wantMsg{Role: m.Role, Content: m.Content, Thinking: m.Thinking, ToolName: m.ToolName, ToolCallID: m.ToolCallID, Images: len(m.Images)}
		for _, c := range m.ToolCalls {
			args := []byte("{}")
			if len(c.Arguments) > 0 {
				args, _ = json.Marshal(c.Arguments) // compact
			}
			w.Calls = append(w.Calls, c.ID+" "+c.Name+" "+string(args))
		}
		out = append(out, w)
	}
	return out
}

func TestBuildConversationMessages(t *testing.T) {
	img0, img1 := testPNG(t, 10), testPNG(t, 200)
	tests := []struct {
		name         string
		instructions string
		history      []hearth.Item
		input        []hearth.Item
		want         []wantMsg
	}{
		{
			name:  "plain user message",
			input: []hearth.Item{itUser("Hi")},
			want:  []wantMsg{{Role: "user", Content: "Hi"}},
		},
		{
			name:         "instructions lead, developer and system become system",
			instructions: "Be brief.",
			input: []hearth.Item{
				itDeveloper("You are Codex."),
				itDeveloper("Sandbox: none."),
				itMsg(hearth.RoleSystem, itPart(hearth.PartInputText, "Sys.")),
				itUser("Go"),
			},
			want: []wantMsg{
				{Role: "system", Content: "Be brief."},
				{Role: "system", Content: "You are Codex."},
				{Role: "system", Content: "Sandbox: none."},
				{Role: "system", Content: "Sys."},
				{Role: "user", Content: "Go"},
			},
		},
		{
			name: "text parts join with a blank line",
			input: []hearth.Item{
				itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "Context."), itPart(hearth.PartInputText, "Question?")),
				itMsg(hearth.RoleAssistant, itPart(hearth.PartOutputText, "A"), hearth.ContentPart{Type: hearth.PartRefusal, Refusal: "No."}),
			},
			want: []wantMsg{
				{Role: "user", Content: "Context.\n\nQuestion?"},
				{Role: "assistant", Content: "A\n\nNo."},
			},
		},
		{
			name: "history before input, multi-turn",
			history: []hearth.Item{
				itUser("One"), itReasoning("think 1"), itAssistant("Uno"),
			},
			input: []hearth.Item{itUser("Two")},
			want: []wantMsg{
				{Role: "user", Content: "One"},
				{Role: "assistant", Content: "Uno", Thinking: "think 1"},
				{Role: "user", Content: "Two"},
			},
		},
		{
			name: "reasoning, text and parallel calls form one assistant message; outputs name their calls",
			input: []hearth.Item{
				itUser("Weather and time?"),
				itReasoning("I need both."),
				itAssistant("Checking."),
				itCall("c1", "get_weather", `{"city": "Paris"}`),
				itCall("c2", "get_time", `{"timezone":"Europe/Paris","b":1}`),
				itOutput("c1", "sunny"),
				itOutput("c2", "noon"),
				itOutput("c9", "orphan"),
				itAssistant("Sunny, noon."),
			},
			want: []wantMsg{
				{Role: "user", Content: "Weather and time?"},
				{Role: "assistant", Content: "Checking.", Thinking: "I need both.", Calls: []string{
					`c1 get_weather {"city":"Paris"}`,
					`c2 get_time {"timezone":"Europe/Paris","b":1}`,
				}},
				{Role: "tool", Content: "sunny", ToolName: "get_weather", ToolCallID: "c1"},
				{Role: "tool", Content: "noon", ToolName: "get_time", ToolCallID: "c2"},
				{Role: "tool", Content: "orphan", ToolCallID: "c9"},
				{Role: "assistant", Content: "Sunny, noon."},
			},
		},
		{
			name: "reasoning then calls without text; empty arguments are no arguments",
			input: []hearth.Item{
				itUser("Go"), itReasoning("r"), itCall("c1", "ping", ""), itCall("c2", "ping", "{}"),
			},
			want: []wantMsg{
				{Role: "user", Content: "Go"},
				{Role: "assistant", Thinking: "r", Calls: []string{"c1 ping {}", "c2 ping {}"}},
			},
		},
		{
			name: "each reasoning starts a new assistant message after text or calls",
			input: []hearth.Item{
				itUser("Go"),
				itReasoning("r1"), itCall("c1", "ping", "{}"),
				itReasoning("r2"), itAssistant("commentary"),
				itReasoning("r3"), itAssistant("final"),
				itAssistant("more"),
			},
			want: []wantMsg{
				{Role: "user", Content: "Go"},
				{Role: "assistant", Thinking: "r1", Calls: []string{"c1 ping {}"}},
				{Role: "assistant", Thinking: "r2", Content: "commentary"},
				{Role: "assistant", Thinking: "r3", Content: "final"},
				{Role: "assistant", Content: "more"},
			},
		},
		{
			name: "trailing reasoning and reasoning before a user message stand alone",
			input: []hearth.Item{
				itUser("a"), itReasoning("lost"), itUser("b"), itReasoning("trailing"),
			},
			want: []wantMsg{
				{Role: "user", Content: "a"},
				{Role: "assistant", Thinking: "lost"},
				{Role: "user", Content: "b"},
				{Role: "assistant", Thinking: "trailing"},
			},
		},
		{
			name: "reasoning without content falls back to the summary",
			input: []hearth.Item{
				itUser("a"),
				{Type: hearth.ItemReasoning, Summary: []hearth.ContentPart{itPart(hearth.PartSummaryText, "s1"), itPart(hearth.PartSummaryText, "s2")}, EncryptedContent: "opaque"},
				itAssistant("b"),
			},
			want: []wantMsg{
				{Role: "user", Content: "a"},
				{Role: "assistant", Thinking: "s1\n\ns2", Content: "b"},
			},
		},
		{
			name: "custom tool calls carry their input as the input argument",
			input: []hearth.Item{
				itUser("Patch it"),
				{Type: hearth.ItemCustomToolCall, CallID: "c1", Name: "apply_patch", Input: "*** Begin Patch\n"},
				{Type: hearth.ItemCustomToolCallOutput, CallID: "c1", Output: hearth.ToolOutput{Text: "done"}},
			},
			want: []wantMsg{
				{Role: "user", Content: "Patch it"},
				{Role: "assistant", Calls: []string{`c1 apply_patch {"input":"*** Begin Patch\n"}`}},
				{Role: "tool", Content: "done", ToolName: "apply_patch", ToolCallID: "c1"},
			},
		},
		{
			name: "images: user parts and tool output parts, in prompt order",
			input: []hearth.Item{
				itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "What is this?"),
					hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(img0)}),
				itCall("c1", "view_image", `{"path":"a.png"}`),
				{Type: hearth.ItemFunctionCallOutput, CallID: "c1", Output: hearth.ToolOutput{Parts: []hearth.ContentPart{
					itPart(hearth.PartInputText, "Here:"),
					{Type: hearth.PartInputImage, ImageURL: base64.StdEncoding.EncodeToString(img1)},
				}}},
			},
			want: []wantMsg{
				{Role: "user", Content: "What is this?", Images: 1},
				{Role: "assistant", Calls: []string{`c1 view_image {"path":"a.png"}`}},
				{Role: "tool", Content: "Here:", ToolName: "view_image", ToolCallID: "c1", Images: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv, err := BuildConversation(tt.instructions, tt.history, tt.input, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(summarizeMessages(conv.Messages), "", "  ")
			want, _ := json.MarshalIndent(tt.want, "", "  ")
			if string(got) != string(want) {
				t.Errorf("messages:\n%s\nwant:\n%s", got, want)
			}
			var n int
			for _, m := range conv.Messages {
				n += len(m.Images)
			}
			if len(conv.Images) != n {
				t.Errorf("Images has %d, messages hold %d", len(conv.Images), n)
			}
		})
	}
}

func TestBuildConversationImagesInOrder(t *testing.T) {
	img0, img1, img2 := testPNG(t, 1), testPNG(t, 2), testPNG(t, 3)
	input := []hearth.Item{
		itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(img0)},
			hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: "data:image/png;base64," + strings.TrimRight(base64.StdEncoding.EncodeToString(img1), "=")}),
		itUser("and"),
		itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(img2)}),
	}
	conv, err := BuildConversation("", nil, input, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{img0, img1, img2}
	if len(conv.Images) != len(want) {
		t.Fatalf("%d images, want %d", len(conv.Images), len(want))
	}
	for i := range want {
		if !bytes.Equal(conv.Images[i], want[i]) {
			t.Errorf("image %d differs", i)
		}
	}
}

func TestBuildConversationTools(t *testing.T) {
	tools := []hearth.Tool{
		testFunctionTool("exec_command", `{"type":"object","properties":{"cmd":{"type":"string","description":"Command"},"tty":{"type":"boolean"}},"required":["cmd"],"additionalProperties":false}`),
		{Type: hearth.ToolFunction, Name: "no_params"},
		{Type: hearth.ToolNamespace, Name: "multi_agent_v1", Tools: []hearth.Tool{
			testFunctionTool("spawn", `{"type":"object","properties":{"task":{"type":"string"}}}`),
			testFunctionTool("wait", `{"type":"object","properties":{}}`),
		}},
		{Type: hearth.ToolNamespace, Name: "other", Tools: []hearth.Tool{testFunctionTool("wait", `{"type":"object"}`)}},
		{Type: hearth.ToolCustom, Name: "apply_patch", Description: "Patch files.", Format: hearth.CustomToolFormat{Type: "grammar", Syntax: "lark", Definition: "start: /.+/"}},
		{Type: "web_search", Raw: json.RawMessage(`{"type":"web_search"}`)},
	}
	history := []hearth.Item{
		itUser("go"),
		{Type: hearth.ItemFunctionCall, CallID: "c1", Name: "spawn", Namespace: "multi_agent_v1", Arguments: `{"task":"x"}`},
		{Type: hearth.ItemFunctionCall, CallID: "c2", Name: "wait", Namespace: "other", Arguments: `{}`},
		{Type: hearth.ItemFunctionCall, CallID: "c3", Name: "gone", Namespace: "old", Arguments: `{}`},
		{Type: hearth.ItemFunctionCall, CallID: "c4", Name: "exec_command", Namespace: "old", Arguments: `{}`},
		itOutput("c2", "ok"),
	}
	conv, err := BuildConversation("", history, nil, tools, scriptRenderer{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range conv.Tools {
		names = append(names, tl.Name)
	}
	wantNames := []string{"exec_command", "no_params", "spawn", "multi_agent_v1__wait", "other__wait", "apply_patch"}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Errorf("tool names %v, want %v", names, wantNames)
	}
	wantRefs := map[string]ToolRef{
		"exec_command":         {Type: "function", Name: "exec_command"},
		"no_params":            {Type: "function", Name: "no_params"},
		"spawn":                {Type: "function", Namespace: "multi_agent_v1", Name: "spawn"},
		"multi_agent_v1__wait": {Type: "function", Namespace: "multi_agent_v1", Name: "wait"},
		"other__wait":          {Type: "function", Namespace: "other", Name: "wait"},
		"apply_patch":          {Type: "custom", Name: "apply_patch"},
	}
	for name, ref := range wantRefs {
		if got := conv.ToolNames[name]; got != ref {
			t.Errorf("ToolNames[%s] = %+v, want %+v", name, got, ref)
		}
		if got, ok := conv.ModelToolName(ref); !ok || got != name {
			t.Errorf("ModelToolName(%+v) = %q, %v; want %q", ref, got, ok, name)
		}
	}
	if len(conv.ToolNames) != len(wantRefs) {
		t.Errorf("ToolNames has %d entries, want %d", len(conv.ToolNames), len(wantRefs))
	}

	// The schemas as the model's renderer shows them (engine/ollama's tests check
	// Ollama's), and a custom tool as the engine writes it.
	for i, tl := range []hearth.Tool{tools[0], tools[1]} {
		want, _ := scriptRenderer{}.ToolParameters(tl.Parameters)
		if string(conv.Tools[i].Parameters) != string(want) {
			t.Errorf("%s parameters %s, want %s", tl.Name, conv.Tools[i].Parameters, want)
		}
	}
	patch, _ := json.Marshal(conv.Tools[5])
	if want := `{"name":"apply_patch","description":"Patch files.\n\nThis tool takes raw text, not JSON: put the whole input in the string argument \"input\". The input must match this Lark grammar:\nstart: /.+/","parameters":{"type":"object","required":["input"],"properties":{"input":{"type":"string","description":"The raw input of the tool."}}}}`; string(patch) != want {
		t.Errorf("apply_patch:\n%s\nwant\n%s", patch, want)
	}

	// History calls use the names the model sees; a call to a tool no longer
	// offered keeps its plain name unless another tool now has it.
	got := summarizeMessages(conv.Messages)
	wantCalls := []string{`c1 spawn {"task":"x"}`, `c2 other__wait {}`, `c3 gone {}`, `c4 old__exec_command {}`}
	if len(got) != 3 || strings.Join(got[1].Calls, "|") != strings.Join(wantCalls, "|") {
		t.Fatalf("messages %+v, want calls %v", got, wantCalls)
	}
	if got[2].ToolName != "other__wait" {
		t.Errorf("tool output ToolName %q, want other__wait", got[2].ToolName)
	}
}

func TestBuildConversationErrors(t *testing.T) {
	pngURL := testDataURL(testPNG(t, 1))
	tests := []struct {
		name      string
		history   []hearth.Item
		input     []hearth.Item
		tools     []hearth.Tool
		param     string
		code      string
		inMessage string
	}{
		{
			name:  "http image URL",
			input: []hearth.Item{itUser("a"), itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "x"), hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: "https://example.com/a.png"})},
			param: "input[1].content[1].image_url", code: CodeInvalidImageURL, inMessage: "does not fetch",
		},
		{
			name:  "image by file_id",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, FileID: "file-1"})},
			param: "input[0].content[0].file_id", code: CodeUnsupportedContent,
		},
		{
			name:  "bad base64",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: "data:image/png;base64,!!!"})},
			param: "input[0].content[0].image_url", code: CodeInvalidImageURL, inMessage: "base64",
		},
		{
			name:  "not an image",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("hello, world"))})},
			param: "input[0].content[0].image_url", code: CodeInvalidImageURL, inMessage: "not an image",
		},
		{
			name:  "truncated PNG",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(testPNG(t, 1)[:40])})},
			param: "input[0].content[0].image_url", code: CodeInvalidImageURL, inMessage: "cannot be",
		},
		{
			name:  "canvas over MaxImagePixels",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(pngClaiming(t, 8193, 8192))})},
			param: "input[0].content[0].image_url", code: CodeInvalidImageURL, inMessage: "8193x8192 pixels",
		},
		{
			name:  "data URL without base64",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: "data:image/png,abc"})},
			param: "input[0].content[0].image_url", code: CodeInvalidImageURL,
		},
		{
			name:  "image in tool output",
			input: []hearth.Item{{Type: hearth.ItemFunctionCallOutput, CallID: "c", Output: hearth.ToolOutput{Parts: []hearth.ContentPart{{Type: hearth.PartInputImage, ImageURL: "http://x/y.png"}}}}},
			param: "input[0].output[0].image_url", code: CodeInvalidImageURL,
		},
		{
			name:  "input_file not read by the server",
			input: []hearth.Item{itMsg(hearth.RoleUser, hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: pngURL}, hearth.ContentPart{Type: hearth.PartInputFile, FileData: "abc"})},
			param: "input[0].content[1]", code: CodeUnsupportedContent, inMessage: "whose text was not read",
		},
		{
			name:  "invalid arguments",
			input: []hearth.Item{itUser("a"), itCall("c1", "f", `{"a":`)},
			param: "input[1].arguments", code: hearth.CodeInvalidValue,
		},
		{
			name:  "arguments not an object",
			input: []hearth.Item{itCall("c1", "f", `[1,2]`)},
			param: "input[0].arguments", code: hearth.CodeInvalidValue,
		},
		{
			name:  "item_reference",
			input: []hearth.Item{itUser("a"), {Type: hearth.ItemReference, ID: "msg_1"}},
			param: "input[1]", code: CodeUnsupportedItem,
		},
		{
			name:  "compaction",
			input: []hearth.Item{{Type: hearth.ItemCompaction, EncryptedContent: "x"}},
			param: "input[0]", code: CodeUnsupportedItem,
		},
		{
			name:    "stored item",
			history: []hearth.Item{itUser("a"), itCall("c1", "f", `nope`)},
			input:   []hearth.Item{itUser("b")},
			param:   "previous_response_id", code: hearth.CodeInvalidValue, inMessage: "item 1 of the previous response chain",
		},
		{
			name:  "schema the renderer cannot show",
			input: []hearth.Item{itUser("a")},
			tools: []hearth.Tool{testFunctionTool("ok", `{}`), testFunctionTool("f", `{"type":"object",`)},
			param: "tools[1].parameters", code: hearth.CodeInvalidValue, inMessage: "not a JSON Schema the model's template can show",
		},
		{
			name:  "namespace tool's schema",
			input: []hearth.Item{itUser("a")},
			tools: []hearth.Tool{{Type: hearth.ToolNamespace, Name: "ns", Tools: []hearth.Tool{testFunctionTool("ok", `{}`), testFunctionTool("f", `nope`)}}},
			param: "tools[0].tools[1].parameters", code: hearth.CodeInvalidValue,
		},
		{
			name:  "namespaced name clashes with a tool's own name",
			input: []hearth.Item{itUser("a")},
			tools: []hearth.Tool{
				testFunctionTool("ns__f", `{}`), testFunctionTool("f", `{}`),
				{Type: hearth.ToolNamespace, Name: "ns", Tools: []hearth.Tool{testFunctionTool("f", `{}`)}},
			},
			param: "tools[2].tools[0].name", code: hearth.CodeDuplicateToolName,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildConversation("", tt.history, tt.input, tt.tools, scriptRenderer{})
			var herr *hearth.Error
			if !errors.As(err, &herr) {
				t.Fatalf("error %v, want a *hearth.Error", err)
			}
			if herr.Status != 400 || herr.Param != tt.param || herr.Code != tt.code || !strings.Contains(herr.Message, tt.inMessage) {
				t.Errorf("got %d %s %s %q; want 400 %s %s containing %q", herr.Status, herr.Param, herr.Code, herr.Message, tt.param, tt.code, tt.inMessage)
			}
		})
	}
}

// A file's text, as the server hands it over, reaches the model marked off with its
// name, after the message's own text.
func TestBuildConversationFileText(t *testing.T) {
	in := []hearth.Item{itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "Summarise this."),
		hearth.FileTextPart("file_1", "notes.md", "# Notes\nThe kettle ships on Tuesday.\n"))}
	c, err := BuildConversation("", nil, in, nil, scriptRenderer{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Summarise this.\n\n<file name=\"notes.md\">\n# Notes\nThe kettle ships on Tuesday.\n</file>"
	if len(c.Messages) != 1 || c.Messages[0].Content != want {
		t.Errorf("messages %+v, want content %q", c.Messages, want)
	}
}
