package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // the image formats the runtime decodes (its model package)
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"strconv"
	"strings"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/webp"

	"hearth"
	"hearth/internal/schemaguard"
	"hearth/toolgrammar"
)

// Error codes of BuildConversation beyond the root package's validation codes.
const (
	// CodeInvalidImageURL: an input_image hearth cannot turn into bytes (an
	// http(s) URL, which hearth does not fetch, or data that is not an image).
	CodeInvalidImageURL = "invalid_image_url"
	// CodeUnsupportedContent: a content part hearth cannot show a local model
	// (input_file, input_video, an input_image by file_id).
	CodeUnsupportedContent = "unsupported_content"
	// CodeUnsupportedItem: an input item BuildConversation cannot render
	// (an item_reference the caller did not resolve, a compaction item not
	// opened, an unknown type).
	CodeUnsupportedItem = "unsupported_item"
)

// Conversation is a request's context as the model's template sees it: the
// chat messages and tools a runtime's chat endpoint would receive for the same
// conversation. The model's PromptRenderer turns it into prompt text.
type Conversation struct {
	Messages []Message
	Tools    []Tool
	// Images are the images of Messages in prompt order: image i is the one a
	// template model's prompt marks [img-i], and the i-th image of a raw
	// /api/generate request.
	Images [][]byte
	// ToolNames maps the function name the model sees (in Tools, and in the
	// calls it writes) back to the request's tool. See BuildConversation for
	// how namespaced and custom tools are named.
	ToolNames map[string]ToolRef
	// Resume is a prompt saved earlier (saved.go) that the renderer may splice onto
	// when it has none of its own of a prefix of Messages; nil when there is none.
	Resume *SavedPrompt
	// Prior is what the renderer kept when it rendered the previous turn of this
	// conversation's chain (memo.go), nil when nothing was kept; Rendered is what
	// it keeps of this one. Both are the renderer's own, opaque here.
	Prior, Rendered any

	// Stable is how many of the first Messages will never change (their array is
	// shared with a kept build, memo.go): what a renderer may keep for the next turn.
	Stable int

	// built is the build's state for the next turn (memo.go); nil when none is kept.
	// resumed: the build went on from the previous turn's. frozen: Messages[:frozen]
	// are shared with a kept build and must not be written in place (writable).
	built   *buildState
	resumed bool
	frozen  int

	modelNames map[ToolRef]string
	// freeforms holds the compiled input format of each custom tool, by the name
	// the model sees.
	freeforms map[string]*toolgrammar.Freeform
	// toolParams is where each tool sits in the request ("tools[2]",
	// "tools[0].tools[1]"), by the name the model sees, for errors that name it.
	toolParams map[string]string
}

// Message is one chat message as a model's template sees it.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role     string
	Content  string
	Thinking string
	// Images are the message's images, as encoded files.
	Images    [][]byte
	ToolCalls []ToolCall
	// ToolName is the function a tool message answers (the name the model saw);
	// ToolCallID the call's id. Both may be empty.
	ToolName, ToolCallID string
}

// ToolCall is one call of an assistant message.
type ToolCall struct {
	ID string
	// Index is the call's position in its message, as runtimes number the calls
	// they parse.
	Index int
	// Name is the function's name as the model sees it.
	Name string
	// Arguments is the JSON object of the arguments as the caller wrote it (key
	// order and number text included: templates show them from it); empty when the
	// call had none. BuildConversation checks that it is an object (or null).
	Arguments json.RawMessage
}

// Tool is a function the model is shown; its JSON is the function as templates
// print it.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments as the model's prompt shows
	// it (PromptRenderer.ToolParameters).
	Parameters json.RawMessage `json:"parameters"`
}

// Freeform returns the compiled input format of the custom tool the model knows as
// modelName, and false when that is not a custom tool.
func (c *Conversation) Freeform(modelName string) (*toolgrammar.Freeform, bool) {
	f, ok := c.freeforms[modelName]
	return f, ok
}

// ToolRef names a tool as the request does.
type ToolRef struct {
	// Type is hearth.ToolFunction or hearth.ToolCustom: it says whether a call
	// becomes a function_call or a custom_tool_call item.
	Type string
	// Namespace is the namespace tool the function belongs to, or "".
	Namespace string
	Name      string
}

// ModelToolName returns the function name the model sees for ref, and false
// when ref is not one of the request's tools.
func (c *Conversation) ModelToolName(ref ToolRef) (string, bool) {
	name, ok := c.modelNames[ref]
	return name, ok
}

// BuildConversation maps a request onto chat messages and tools:
// instructions, then history (the input and output items of the
// previous_response_id chain, oldest first), then input (the request's own
// input items). History and input are separate only so that an error can
// name its item: input[3].content[0].image_url for the request's own items,
// previous_response_id for stored ones. Errors are *hearth.Error (400).
//
// The mapping follows Ollama's own /v1/responses (openai/responses.go) where
// that is sound, so that a conversation renders as it would through Ollama:
//
//   - instructions become a leading system message; system and developer
//     messages become system messages (Codex sends two developer messages;
//     the template layer joins consecutive system messages with "\n\n").
//   - The text parts of a message are joined with "\n\n". Ollama's
//     /v1/responses concatenates them with nothing between, which glues
//     separate blocks together ("...context.What is..."); its
//     /v1/chat/completions sends each part as its own message, which the
//     template layer then joins with "\n\n". hearth follows the latter, so a
//     message of two parts renders exactly like two messages of one part.
//   - input_image parts become the message's Images (base64 data URLs or bare
//     base64; http(s) URLs cannot be fetched offline).
//   - A reasoning item becomes the Thinking of the assistant message that
//     follows it; a reasoning item followed by no assistant output becomes an
//     assistant message with thinking only (as Ollama does). Its text is the
//     reasoning_text content, or, when a client sent none back (Codex keeps
//     only summary and encrypted_content), the summary: hearth mirrors its
//     raw reasoning into the summary, so that is the same text.
//     encrypted_content is opaque here: Prepare opens hearth's own sealed
//     reasoning and restores Content before calling (sealed.go).
//   - Assistant text, the reasoning before it and the function calls right
//     after it form ONE assistant message with several ToolCalls: that is the
//     shape templates render parallel calls from. (The template layer merges
//     consecutive assistant messages but keeps only the first one's calls and
//     thinking, so splitting them would lose calls.)
//   - function_call_output becomes a tool message whose ToolName is the name
//     the model saw for the call with that call_id (empty when no earlier item
//     has it).
//   - custom tools are shown to the model as functions of one string
//     parameter "input" (and a grammar-constrained one has its grammar in the
//     description); custom_tool_call items render as calls with arguments
//     {"input": <input>} and their outputs as tool messages.
//   - Namespace tools (Codex's multi_agent_v1) are flattened: the model sees
//     each nested function under its plain name when no other tool has that
//     name, else as <namespace>__<name>. ToolNames maps it back. A plain name
//     reads best to the model and matches how the calls come back from
//     clients (Item.Name plus Item.Namespace); the prefix only resolves a
//     real clash.
//   - Hosted tools are not shown. item_reference and compaction items are
//     refused with CodeUnsupportedItem: the server replaces item references
//     with the stored items they name (server/references.go), and Prepare
//     turns a compaction item into the user message of its summary before
//     calling (sealed.go).
//
// r, the model's renderer, says how function tools' schemas are shown (its
// ToolParameters); it may be nil when tools has no function tools.
func BuildConversation(instructions string, history, input []hearth.Item, tools []hearth.Tool, r PromptRenderer) (*Conversation, error) {
	conv, _, err := buildConversation(instructions, history, input, tools, r, nil)
	return conv, err
}

// buildConversation is BuildConversation going on from prior, the state of an earlier
// build over a prefix of history (memo.go), when prior fits this one; it also returns
// the state after history and input, before the last message is closed, for the next
// turn's build.
func buildConversation(instructions string, history, input []hearth.Item, tools []hearth.Tool, r PromptRenderer, prior *buildState) (*Conversation, *buildState, error) {
	conv := &Conversation{ToolNames: map[string]ToolRef{}, modelNames: map[ToolRef]string{}, freeforms: map[string]*toolgrammar.Freeform{}, toolParams: map[string]string{}}
	if err := conv.addTools(tools, r); err != nil {
		return nil, nil, err
	}
	b := convBuilder{conv: conv, nHistory: len(history)}
	start := 0
	if prior.fits(instructions, conv, len(history)) {
		start = prior.items
		b.resume(prior, len(history)+len(input)-start)
		conv.resumed = true
	} else {
		// At most a message per item, and the instructions: a 1,000-turn chain's
		// messages are then not copied over and over as the slice grows.
		conv.Messages = make([]Message, 0, len(history)+len(input)+1)
		if instructions != "" {
			b.append(Message{Role: "system", Content: instructions})
		}
	}
	for i := start; i < len(history); i++ {
		if err := b.add(i, &history[i]); err != nil {
			return nil, nil, err
		}
	}
	for i := range input {
		if err := b.add(len(history)+i, &input[i]); err != nil {
			return nil, nil, err
		}
	}
	state := b.state(instructions, len(history)+len(input))
	b.flush()
	return conv, state, nil
}

// addTools converts the request's tools to the ones the model sees and names them.
func (c *Conversation) addTools(tools []hearth.Tool, r PromptRenderer) error {
	// The decoder rejects duplicate names among top-level tools and within one
	// namespace; only nested names can clash with others. Count every name
	// first so a nested function keeps its plain name only when unique.
	count := map[string]int{}
	for _, t := range tools {
		switch t.Type {
		case hearth.ToolFunction, hearth.ToolCustom:
			count[t.Name]++
		case hearth.ToolNamespace:
			for _, f := range t.Tools {
				count[f.Name]++
			}
		}
	}
	add := func(param, name string, ref ToolRef, fn Tool) error {
		if prev, dup := c.ToolNames[name]; dup {
			return hearth.InvalidRequest(param, hearth.CodeDuplicateToolName,
				fmt.Sprintf("Tool '%s' would be shown to the model as '%s', which is already the name of tool '%s'.", ref.Name, name, prev.Name))
		}
		fn.Name = name
		c.Tools = append(c.Tools, fn)
		c.ToolNames[name] = ref
		c.modelNames[ref] = name
		c.toolParams[name] = strings.TrimSuffix(param, ".name")
		return nil
	}
	for i, t := range tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case hearth.ToolFunction:
			fn, err := promptFunctionTool(t, param, r)
			if err != nil {
				return err
			}
			if err := add(param+".name", t.Name, ToolRef{Type: hearth.ToolFunction, Name: t.Name}, fn); err != nil {
				return err
			}
		case hearth.ToolCustom:
			syntax := ""
			if t.Format.Type == "grammar" {
				syntax = t.Format.Syntax
			}
			f, err := toolgrammar.CompileFreeform(syntax, t.Format.Definition)
			if err != nil {
				p := param + ".format.definition"
				return hearth.InvalidRequest(p, hearth.CodeInvalidValue,
					fmt.Sprintf("Invalid '%s': the %s grammar cannot be read: %v.", p, syntax, err))
			}
			if err := add(param+".name", t.Name, ToolRef{Type: hearth.ToolCustom, Name: t.Name}, promptCustomTool(t)); err != nil {
				return err
			}
			c.freeforms[t.Name] = f
		case hearth.ToolNamespace:
			for j, f := range t.Tools {
				p := fmt.Sprintf("%s.tools[%d]", param, j)
				fn, err := promptFunctionTool(f, p, r)
				if err != nil {
					return err
				}
				name := f.Name
				if count[name] > 1 {
					name = t.Name + "__" + f.Name
				}
				if err := add(p+".name", name, ToolRef{Type: hearth.ToolFunction, Namespace: t.Name, Name: f.Name}, fn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// promptFunctionTool is a function tool as the model sees it: its schema as the
// model's prompt shows it (r.ToolParameters), which is also what the parser and
// an emulated format's system prompt see.
func promptFunctionTool(t hearth.Tool, param string, r PromptRenderer) (Tool, error) {
	if r == nil {
		return Tool{}, fmt.Errorf("engine: function tool %q without a model to show it to", t.Name)
	}
	params, err := r.ToolParameters(t.Parameters)
	var bounds *schemaguard.Error
	if errors.As(err, &bounds) {
		// Over the bounds any schema is held to (the renderer checks them before
		// its reading, whose cost grows with the square of the nesting).
		return Tool{}, hearth.InvalidRequest(param+".parameters", hearth.CodeInvalidFunctionParameters,
			fmt.Sprintf("Invalid '%s.parameters': %v.", param, err))
	}
	if err != nil {
		return Tool{}, hearth.InvalidRequest(param+".parameters", hearth.CodeInvalidValue,
			fmt.Sprintf("Invalid '%s.parameters': not a JSON Schema the model's template can show: %v.", param, err))
	}
	return Tool{Name: t.Name, Description: t.Description, Parameters: params}, nil
}

// promptCustomTool shows a custom tool as a function of one string, the tool's
// free-form input. Templates and tool-call formats only know JSON functions,
// and one string argument is the smallest faithful encoding. The description
// says the input is raw text (not JSON of its own) and gives its grammar.
func promptCustomTool(t hearth.Tool) Tool {
	desc := t.Description
	if desc != "" {
		desc += "\n\n"
	}
	desc += "This tool takes raw text, not JSON: put the whole input in the string argument \"input\"."
	if t.Format.Type == "grammar" {
		what := "this Lark grammar"
		if t.Format.Syntax == toolgrammar.SyntaxRegex {
			what = "this regular expression, as a whole"
		}
		desc += fmt.Sprintf(" The input must match %s:\n%s", what, t.Format.Definition)
	}
	return Tool{Name: t.Name, Description: desc, Parameters: customToolParameters}
}

// customToolParameters is the schema of a custom tool's one string argument, in the
// key order runtimes print tool schemas in.
var customToolParameters = json.RawMessage(`{"type":"object","required":["input"],"properties":{"input":{"type":"string","description":"The raw input of the tool."}}}`)

// convBuilder accumulates messages; pending is the assistant message being
// assembled from reasoning, text and calls.
type convBuilder struct {
	conv     *Conversation
	nHistory int
	pending  *Message
}

// callName is the function name the model saw for the latest call with id before
// this point, for the ToolName of its output ("" when none has it). Looked up from the
// end: a call's output follows it closely, and a kept build (memo.go) carries no map.
func (b *convBuilder) callName(id string) string {
	if id == "" {
		return ""
	}
	find := func(m *Message) (string, bool) {
		for j := len(m.ToolCalls) - 1; j >= 0; j-- {
			if m.ToolCalls[j].ID == id {
				return m.ToolCalls[j].Name, true
			}
		}
		return "", false
	}
	if b.pending != nil {
		if name, ok := find(b.pending); ok {
			return name
		}
	}
	for i := len(b.conv.Messages) - 1; i >= 0; i-- {
		if name, ok := find(&b.conv.Messages[i]); ok {
			return name
		}
	}
	return ""
}

// param names item i as the caller knows it.
func (b *convBuilder) param(i int, field string) string {
	if i < b.nHistory {
		return "previous_response_id"
	}
	p := fmt.Sprintf("input[%d]", i-b.nHistory)
	if field != "" {
		p += "." + field
	}
	return p
}

// what describes item i in messages, for stored items whose param cannot
// point at them.
func (b *convBuilder) what(i int, param string) string {
	if i < b.nHistory {
		return fmt.Sprintf("item %d of the previous response chain", i)
	}
	return "'" + param + "'"
}

func (b *convBuilder) append(m Message) {
	b.flush()
	b.conv.Messages = append(b.conv.Messages, m)
	b.conv.Images = append(b.conv.Images, m.Images...)
}

func (b *convBuilder) flush() {
	if b.pending != nil {
		m := *b.pending
		b.pending = nil
		b.conv.Messages = append(b.conv.Messages, m)
	}
}

// assistant returns the open assistant message; fresh starts a new one
// when the open one already has text or calls.
func (b *convBuilder) assistant(fresh bool) *Message {
	if b.pending != nil && fresh && (b.pending.Content != "" || len(b.pending.ToolCalls) > 0) {
		b.flush()
	}
	if b.pending == nil {
		b.pending = &Message{Role: "assistant"}
	}
	return b.pending
}

func (b *convBuilder) add(i int, it *hearth.Item) error {
	switch it.Type {
	case hearth.ItemMessage:
		return b.addMessage(i, it)

	case hearth.ItemReasoning:
		text := reasoningText(it)
		m := b.assistant(true)
		m.Thinking += text

	case hearth.ItemFunctionCall, hearth.ItemCustomToolCall:
		call := ToolCall{ID: it.CallID}
		if it.Type == hearth.ItemFunctionCall {
			call.Name = b.conv.callName(ToolRef{Type: hearth.ToolFunction, Namespace: it.Namespace, Name: it.Name})
			if strings.TrimSpace(it.Arguments) != "" {
				if err := checkArguments(it.Arguments); err != nil {
					p := b.param(i, "arguments")
					return hearth.InvalidRequest(p, hearth.CodeInvalidValue,
						fmt.Sprintf("Invalid %s: the arguments of function call '%s' are not a JSON object: %v.", b.what(i, p), it.Name, err))
				}
				call.Arguments = json.RawMessage(it.Arguments)
			}
		} else {
			call.Name = b.conv.callName(ToolRef{Type: hearth.ToolCustom, Name: it.Name})
			input, _ := json.Marshal(it.Input)
			call.Arguments = json.RawMessage(`{"input":` + string(input) + `}`)
		}
		m := b.assistant(false)
		call.Index = len(m.ToolCalls)
		m.ToolCalls = append(m.ToolCalls, call)

	case hearth.ItemFunctionCallOutput, hearth.ItemCustomToolCallOutput:
		m := Message{Role: "tool", ToolName: b.callName(it.CallID), ToolCallID: it.CallID}
		if it.Output.Parts == nil {
			m.Content = it.Output.Text
		} else {
			var err error
			if m.Content, m.Images, err = b.parts(i, "output", it.Output.Parts); err != nil {
				return err
			}
		}
		b.append(m)

	case hearth.ItemReference, hearth.ItemCompaction:
		p := b.param(i, "")
		return hearth.InvalidRequest(p, CodeUnsupportedItem,
			fmt.Sprintf("Items of type '%s' are not supported by hearth yet (%s); send the items themselves.", it.Type, b.what(i, p)))

	default:
		p := b.param(i, "type")
		return hearth.InvalidRequest(p, CodeUnsupportedItem, fmt.Sprintf("Unknown item type '%s' in %s.", it.Type, b.what(i, p)))
	}
	return nil
}

func (b *convBuilder) addMessage(i int, it *hearth.Item) error {
	content, images, err := b.parts(i, "content", it.Content)
	if err != nil {
		return err
	}
	switch it.Role {
	case hearth.RoleAssistant:
		m := b.assistant(true)
		m.Content = content
		// An assistant message closes its turn unless calls follow; leave it
		// open so that they join it.
	case hearth.RoleSystem, hearth.RoleDeveloper:
		b.append(Message{Role: "system", Content: content, Images: images})
	default:
		b.append(Message{Role: it.Role, Content: content, Images: images})
	}
	return nil
}

// partSeparator joins the text parts of one message; see BuildConversation.
const partSeparator = "\n\n"

// fileBlock is how the model sees a file's text among a message's parts: marked off,
// with its name, so that it can tell the file from what the user wrote and say which
// file it quotes.
func fileBlock(name, text string) string {
	if name == "" {
		name = "file"
	}
	return "<file name=" + strconv.Quote(name) + ">\n" + strings.TrimRight(text, "\n") + "\n</file>"
}

// parts joins the text of content parts and decodes their images.
func (b *convBuilder) parts(i int, field string, parts []hearth.ContentPart) (string, [][]byte, error) {
	var texts []string
	var images [][]byte
	for j, p := range parts {
		switch p.Type {
		case hearth.PartInputText, hearth.PartOutputText, hearth.PartText:
			texts = append(texts, p.Text)
		case hearth.PartRefusal:
			texts = append(texts, p.Refusal)
		case hearth.PartInputFile:
			text, ok := p.FileText()
			if !ok {
				// The server reads every file into its text before a response runs.
				param := b.param(i, fmt.Sprintf("%s[%d]", field, j))
				return "", nil, hearth.InvalidRequest(param, CodeUnsupportedContent,
					fmt.Sprintf("Invalid %s: an input_file whose text was not read.", b.what(i, param)))
			}
			texts = append(texts, fileBlock(p.Filename, text))
		case hearth.PartInputImage:
			if p.ImageURL == "" {
				param := b.param(i, fmt.Sprintf("%s[%d].file_id", field, j))
				return "", nil, hearth.InvalidRequest(param, CodeUnsupportedContent,
					fmt.Sprintf("Invalid %s: an image by file_id whose file was not read.", b.what(i, param)))
			}
			param := b.param(i, fmt.Sprintf("%s[%d].image_url", field, j))
			img, err := decodeImage(p.ImageURL)
			if err != nil {
				return "", nil, hearth.InvalidRequest(param, CodeInvalidImageURL, fmt.Sprintf("Invalid %s: %v.", b.what(i, param), err))
			}
			images = append(images, img)
		default:
			param := b.param(i, fmt.Sprintf("%s[%d].type", field, j))
			return "", nil, hearth.InvalidRequest(param, CodeUnsupportedContent,
				fmt.Sprintf("Content of type '%s' is not supported by hearth (%s).", p.Type, b.what(i, param)))
		}
	}
	return strings.Join(texts, partSeparator), images, nil
}

// checkArguments reports why a call's arguments are not a JSON object. null
// passes: runtimes read it as no arguments (Ollama's argument type takes it).
func checkArguments(args string) error {
	var v json.RawMessage
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return err
	}
	switch v[0] {
	case '{', 'n':
		return nil
	case '[':
		return errors.New("it is an array")
	case '"':
		return errors.New("it is a string")
	case 't', 'f':
		return errors.New("it is a boolean")
	}
	return errors.New("it is a number")
}

// reasoningText is the thinking a reasoning item stands for: its raw
// reasoning, else its summary (see BuildConversation).
func reasoningText(it *hearth.Item) string {
	var s strings.Builder
	for _, p := range it.Content {
		s.WriteString(p.Text)
	}
	if s.Len() > 0 {
		return s.String()
	}
	var summary []string
	for _, p := range it.Summary {
		summary = append(summary, p.Text)
	}
	return strings.Join(summary, partSeparator)
}

// callName is the name the model sees for a call to ref. A call to a tool
// the request no longer has keeps its plain name, or the namespaced form
// when the plain name now belongs to another tool.
func (c *Conversation) callName(ref ToolRef) string {
	if name, ok := c.modelNames[ref]; ok {
		return name
	}
	if _, taken := c.ToolNames[ref.Name]; ref.Namespace != "" && taken {
		return ref.Namespace + "__" + ref.Name
	}
	return ref.Name
}

// decodeImage returns the bytes of a base64 data URL or of bare base64.
func decodeImage(u string) ([]byte, error) {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return nil, fmt.Errorf("hearth does not fetch image URLs; send the image as a base64 data URL (data:image/png;base64,...)")
	}
	data := u
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, fmt.Errorf("expected a base64 data URL (data:image/png;base64,...)")
		}
		data = payload
	}
	img, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		// Some clients strip the padding.
		if img, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "=")); err != nil {
			return nil, fmt.Errorf("the image data is not valid base64")
		}
	}
	// Sniff here, where the error can name the field: the runtime would fail
	// on the same bytes with a 500 far from its cause.
	if ct := http.DetectContentType(img); !strings.HasPrefix(ct, "image/") {
		return nil, fmt.Errorf("the data is not an image (it looks like %s)", ct)
	}
	// Decode it too, as the runtime will: bytes that only start like an image (a
	// truncated PNG) fail there as a 500. The header comes first so that a small
	// file claiming a huge canvas costs no memory here.
	cfg, format, err := image.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("the image cannot be read (%v); send PNG, JPEG, WebP, GIF or BMP", err)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxImagePixels {
		return nil, fmt.Errorf("the image is %dx%d pixels; hearth accepts at most %d pixels", cfg.Width, cfg.Height, MaxImagePixels)
	}
	if _, _, err := image.Decode(bytes.NewReader(img)); err != nil {
		return nil, fmt.Errorf("the %s image cannot be decoded (%v)", format, err)
	}
	return img, nil
}

// MaxImagePixels bounds an input image's canvas (8192x8192): vision models scale
// images down to about a megapixel anyway, and decoding checks cost memory in
// proportion to the canvas.
const MaxImagePixels = 8192 * 8192
