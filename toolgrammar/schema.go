package toolgrammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The runtime turns a `format` JSON schema into a grammar with llama.cpp's
// json-schema-to-grammar, which generates object properties in the order the
// schema text lists them and resolves $ref against the root. So constraint
// schemas are built as ordered JSON (a Go map would put "arguments" before
// "name"), with every $defs hoisted to the root, and only with keywords the
// converter understands: anything else is dropped, because an unknown shape
// can make the conversion fail and the request with it.

// Plan says how an engine forces a call in a format.
type Plan uint8

const (
	// PlanCall: append CallPrefix, generate with CallSchema, append
	// CallSuffix. For formats whose name sits inside the JSON.
	PlanCall Plan = iota + 1
	// PlanNameThenArgs: append CallPrefix, generate with NameSchema (a JSON
	// string: decode it), append ArgumentsPrefix(name), generate with
	// ArgumentsSchema, append CallSuffix. For Mistral v11, DeepSeek, harmony.
	PlanNameThenArgs
	// PlanNameOnly: formats whose arguments are not JSON (XML parameters,
	// Gemma's and Python's call syntax) cannot be constrained by a JSON schema; the engine
	// forces the tool by appending CallPrefix, the name (NameSchema) and
	// ArgumentsPrefix(name), and lets the model write the arguments.
	// Arguments that must be constrained are generated as JSON under
	// ArgumentsSchema and written with ArgumentsFromJSON.
	PlanNameOnly
)

// Plan tells how calls in f can be constrained.
func (f *Format) Plan() Plan {
	switch f.Tools.Kind {
	case JSONObject, JSONArray:
		return PlanCall
	case Harmony:
		if f.Tools.KeyOpen != "" {
			return PlanNameOnly // Glimmer's XML blocks
		}
		return PlanNameThenArgs
	case NameJSON:
		return PlanNameThenArgs
	case XMLParams, GemmaCall, PythonCall:
		return PlanNameOnly
	}
	return 0
}

// CallPrefix is the text an engine appends to the prompt and the output so
// far (soFar) to start a call it will generate constrained. It depends on
// soFar where the opener has context: harmony needs a new message header
// unless soFar already ends with "<|start|>assistant", DeepSeek opens the
// group of calls unless one is open.
func (f *Format) CallPrefix(soFar string) string {
	e := &f.Tools
	switch e.Kind {
	case JSONObject, JSONArray:
		// Bare formats (Llama) also have an explicit opener; use it, since a
		// bare object is only a call at the start of the reply.
		return e.Open[0]
	case NameJSON:
		if e.GroupOpen != "" {
			t := strings.TrimRight(soFar, " \t\r\n")
			if !strings.HasSuffix(t, e.GroupOpen) && (e.Close == "" || !strings.HasSuffix(t, e.Close)) {
				return e.GroupOpen + e.Open[0]
			}
		}
		return e.Open[0]
	case XMLParams:
		if e.NameOpen != "" {
			return e.Open[0] + "\n" + e.NameOpen
		}
		return e.Open[0]
	case GemmaCall:
		return e.Open[0] + e.NamePrefix
	case PythonCall:
		return pythonCallPrefix(e, soFar)
	case Harmony:
		h := e.Channel + "commentary to=" + e.Recipient
		if e.Channel == "" {
			// Glimmer: the recipient follows the role; the prompt ends with
			// "<|start|>assistant", so with nothing written the header is open.
			h = " to=" + e.Recipient
			if soFar == "" {
				return h
			}
		}
		if strings.HasSuffix(soFar, e.Start+"assistant") {
			return h
		}
		return e.Start + "assistant" + h
	}
	return ""
}

// RecipientAt is, for a harmony transcript out that ends after a call's
// header, where the header's recipient name begins (an engine that writes
// another name cuts the transcript there) and what must be written before
// a name: "" when the header names a recipient, else, for a Glimmer block
// under a header that named none, " to=". It is -1 when a gpt-oss header
// names no function.
func (f *Format) RecipientAt(out string) (int, string) {
	e := &f.Tools
	hs := 0
	if i := strings.LastIndex(out, e.Start); i >= 0 {
		hs = i + len(e.Start)
	}
	he := len(out)
	if i := strings.Index(out[hs:], e.Message); i >= 0 {
		he = hs + i
	}
	hdr := out[hs:he]
	if i := strings.Index(hdr, "to="+e.Recipient); i >= 0 {
		return hs + i + len("to=") + len(e.Recipient), ""
	}
	if e.Channel != "" {
		return -1, ""
	}
	return hs + len(strings.TrimRight(hdr, " \t\r\n")), " to=" + e.Recipient
}

// pythonCallPrefix: outside an envelope, the opener (and the list's '['); inside
// one the model opened (a retry of one of its calls), only what the next call
// still needs: the '[' of the list, or the separator after a previous call.
func pythonCallPrefix(e *Envelope, soFar string) string {
	at := strings.LastIndex(soFar, e.Open[0])
	if at < 0 || at < strings.LastIndex(soFar, e.Close) {
		if e.CallList {
			return e.Open[0] + "["
		}
		return e.Open[0]
	}
	rest := strings.TrimSpace(soFar[at+len(e.Open[0]):])
	if e.CallList {
		if !strings.HasPrefix(rest, "[") {
			return "["
		}
		rest = strings.TrimSpace(rest[1:])
	}
	if rest == "" || strings.HasSuffix(rest, ",") || strings.TrimRight(soFar, " \t\r\n") != soFar {
		return ""
	}
	return e.Separator
}

// ArgumentsPrefix is the text between a call's name and its arguments, for
// formats with the name outside the JSON.
func (f *Format) ArgumentsPrefix(name string) string {
	e := &f.Tools
	switch e.Kind {
	case NameJSON:
		if e.ArgsMarker != "" {
			return name + e.ArgsMarker
		}
		return name + e.NameEnd[0]
	case XMLParams:
		if e.NameClose != "" {
			return name + e.NameClose + "\n"
		}
		return name + "\n"
	case GemmaCall:
		return name + "{"
	case PythonCall:
		return name + "("
	case Harmony:
		if e.KeyOpen != "" {
			// Glimmer names the function twice: as the recipient and in the
			// block, as its renderer writes a call.
			return name + e.Message + e.Open[0] + "\n" + e.NameOpen + name + e.NameClose + "\n"
		}
		return name + " <|constrain|>json" + e.Message
	}
	return name
}

// ArgumentsFromJSON writes a call's arguments, a JSON object generated under
// ArgumentsSchema, in the format's own syntax through the call's closer, for
// the formats whose arguments are not JSON (PlanNameOnly): XMLArguments,
// GemmaArguments or PythonArguments.
func (f *Format) ArgumentsFromJSON(args string) (string, error) {
	switch f.Tools.Kind {
	case GemmaCall:
		return f.GemmaArguments(args)
	case PythonCall:
		return f.PythonArguments(args)
	}
	return f.XMLArguments(args)
}

// XMLArguments writes a call's arguments, a JSON object generated under
// ArgumentsSchema, as the parameters of an XML envelope, through the call's
// closer: what the model would have written after ArgumentsPrefix(name).
// XML parameters cannot be constrained by a JSON schema, so an engine that
// must constrain them (a model that wrote no valid parameters) has the
// model generate JSON and writes this in its place. Keys keep the JSON's
// order; a string value is written raw, any other as compact JSON (how the
// parsers read a typed value back).
func (f *Format) XMLArguments(args string) (string, error) {
	e := &f.Tools
	if e.KeyOpen == "" || (e.Kind != XMLParams && e.Kind != Harmony) {
		return "", fmt.Errorf("toolgrammar: format %s has no XML parameters", f.ID)
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("toolgrammar: arguments %.100q are not a JSON object", args)
	}
	nl := ""
	if e.TrimValueNewline {
		nl = "\n"
	}
	var sb strings.Builder
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
		}
		value := string(raw)
		var str string
		if json.Unmarshal(raw, &str) == nil {
			value = str
		} else {
			var b bytes.Buffer
			if json.Compact(&b, raw) == nil {
				value = b.String()
			}
		}
		sb.WriteString(e.KeyOpen + key + e.KeyClose)
		if e.ValueOpen != "" {
			sb.WriteString("\n" + e.ValueOpen)
		}
		sb.WriteString(nl + value + nl + e.ValueClose + "\n")
	}
	if _, err := dec.Token(); err != nil {
		return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
	}
	if e.FunctionClose != "" {
		sb.WriteString(e.FunctionClose + "\n")
	}
	sb.WriteString(e.Close)
	return sb.String(), nil
}

// CallSuffix is the text that closes a call the engine generated
// constrained ("" when the JSON's end ends the call).
func (f *Format) CallSuffix() string {
	e := &f.Tools
	switch e.Kind {
	case XMLParams, GemmaCall, PythonCall:
		// Only the name was forced; the model closes the call itself.
		return ""
	case Harmony:
		if e.KeyOpen != "" {
			return ""
		}
		return "<|call|>"
	}
	return e.Close
}

// ErrNotJSONCall is returned by CallSchema for formats that write the name
// outside the JSON (see Plan).
var ErrNotJSONCall = errors.New("toolgrammar: format does not write calls as one JSON value")

// CallSchema builds the constraint for a call to one of tools in format f,
// generated right after CallPrefix: {"<name key>": <const name>, "<args
// key>": <the tool's parameters>} (anyOf over tools), or for JSON array
// formats an array of those with at least one item and, unless parallel,
// at most one.
func CallSchema(f *Format, tools []Tool, parallel bool) ([]byte, error) {
	if f.Plan() != PlanCall {
		return nil, ErrNotJSONCall
	}
	if len(tools) == 0 {
		return nil, errors.New("toolgrammar: no tools to constrain to")
	}
	nameKey, argsKey := f.Tools.NameKey, f.Tools.ArgsKey
	if nameKey == "" {
		nameKey = "name"
	}
	if argsKey == "" {
		argsKey = "arguments"
	}
	b := newSchemaBuilder()
	var alts []*oval
	for _, t := range tools {
		params, err := b.params(t)
		if err != nil {
			return nil, err
		}
		alts = append(alts, obj(
			"type", str("object"),
			"properties", obj(nameKey, obj("const", str(t.Name)), argsKey, params),
			"required", arr(str(nameKey), str(argsKey)),
		))
	}
	call := alts[0]
	if len(alts) > 1 {
		call = obj("anyOf", &oval{kind: 'a', arr: alts})
	}
	root := call
	if f.Tools.Kind == JSONArray {
		root = obj("type", str("array"), "items", call, "minItems", num(1))
		if !parallel {
			root.set("maxItems", num(1))
		}
	}
	return b.finish(root), nil
}

// NameSchema constrains a call's name to one of tools, as a JSON string.
func NameSchema(tools []Tool) ([]byte, error) {
	if len(tools) == 0 {
		return nil, errors.New("toolgrammar: no tools to constrain to")
	}
	var names []*oval
	for _, t := range tools {
		names = append(names, str(t.Name))
	}
	if len(names) == 1 {
		return obj("const", names[0]).marshal(), nil
	}
	return obj("type", str("string"), "enum", &oval{kind: 'a', arr: names}).marshal(), nil
}

// ArgumentsSchema constrains the arguments of one tool.
func ArgumentsSchema(t Tool) ([]byte, error) {
	b := newSchemaBuilder()
	params, err := b.params(t)
	if err != nil {
		return nil, err
	}
	return b.finish(params), nil
}

type schemaBuilder struct {
	defs   []member
	prefix string
	rootOf string // def name of the current tool's whole schema, when refs point into it
}

func newSchemaBuilder() *schemaBuilder { return &schemaBuilder{} }

func (b *schemaBuilder) finish(root *oval) []byte {
	if len(b.defs) > 0 {
		root.set("$defs", &oval{kind: 'o', obj: b.defs})
	}
	return root.marshal()
}

// params sanitises a tool's parameter schema, hoisting its definitions.
func (b *schemaBuilder) params(t Tool) (*oval, error) {
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 || string(raw) == "null" {
		return obj("type", str("object")), nil
	}
	v, err := parseOrdered(raw)
	if err != nil {
		return nil, fmt.Errorf("toolgrammar: tool %q parameters: %w", t.Name, err)
	}
	if v.kind != 'o' {
		return nil, fmt.Errorf("toolgrammar: tool %q parameters are not a JSON schema object", t.Name)
	}
	b.prefix = defName(t.Name) + "."
	b.rootOf = ""
	if needsRoot(v) {
		// A $ref into the schema itself ("#", "#/properties/..."): keep the
		// whole schema as a definition the refs can point into.
		b.rootOf = defName(t.Name)
		b.defs = append(b.defs, member{b.rootOf, nil})
		idx := len(b.defs) - 1
		b.defs[idx].val = b.clean(v, 0)
		b.hoist(v)
		return &oval{kind: 'o', obj: []member{{"$ref", str("#/$defs/" + b.rootOf)}}}, nil
	}
	b.hoist(v)
	out := b.clean(v, 0)
	if out.get("type") == nil && out.get("properties") != nil {
		out.set("type", str("object"))
	}
	return out, nil
}

// hoist moves $defs and definitions of a tool schema to the root.
func (b *schemaBuilder) hoist(v *oval) {
	for _, key := range []string{"$defs", "definitions"} {
		d := v.get(key)
		if d == nil || d.kind != 'o' {
			continue
		}
		for _, m := range d.obj {
			b.defs = append(b.defs, member{b.prefix + m.key, b.clean(m.val, 0)})
		}
	}
}

func needsRoot(v *oval) bool {
	found := false
	v.walk(func(x *oval) {
		if r := x.get("$ref"); r != nil && r.kind == 's' {
			ref := r.strVal()
			if !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/") {
				found = true
			}
		}
	})
	return found
}

// MaxRepetition is the largest repetition bound llama.cpp's grammar parser accepts
// (its MAX_REPETITION_THRESHOLD).
const MaxRepetition = 2000

// withinRepetition reports whether the JSON number n is a bound the grammar parser
// accepts as a repetition count.
func withinRepetition(n string) bool {
	v, err := strconv.ParseFloat(n, 64)
	return err == nil && v <= MaxRepetition
}

var allowedFormats = map[string]bool{"date": true, "time": true, "date-time": true, "uuid": true}

// clean keeps only what the grammar converter supports.
func (b *schemaBuilder) clean(v *oval, depth int) *oval {
	if v == nil || depth > 64 {
		return anySchema()
	}
	if v.kind != 'o' {
		// Boolean schemas and junk: the converter has no "nothing", so
		// both mean any value.
		return anySchema()
	}
	out := &oval{kind: 'o'}
	for _, m := range v.obj {
		switch m.key {
		case "type", "enum", "const", "required", "minItems", "minLength", "pattern":
			out.obj = append(out.obj, m)
		case "maxItems", "maxLength":
			// The runtime's grammar parser refuses a repetition bound above
			// MaxRepetition, and the converter writes these bounds as one
			// (Claude Code's Workflow tool has maxLength 524288): such a bound is
			// left open in the grammar, and the client's schema, which checks every
			// call after generation, still holds it.
			if m.val.kind == 'n' && !withinRepetition(m.val.raw) {
				continue
			}
			out.obj = append(out.obj, m)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			// The converter supports bounds on integers only.
			if t := v.get("type"); t != nil && t.kind == 's' && t.strVal() == "integer" && m.val.kind == 'n' && isInteger(m.val.raw) {
				out.obj = append(out.obj, m)
			}
		case "format":
			if m.val.kind == 's' && allowedFormats[m.val.strVal()] {
				out.obj = append(out.obj, m)
			}
		case "$ref":
			if m.val.kind == 's' {
				out.obj = append(out.obj, member{"$ref", str(b.ref(m.val.strVal()))})
			}
		case "properties":
			if m.val.kind == 'o' {
				props := &oval{kind: 'o'}
				for _, p := range m.val.obj {
					props.obj = append(props.obj, member{p.key, b.clean(p.val, depth+1)})
				}
				out.obj = append(out.obj, member{"properties", props})
			}
		case "items", "additionalProperties":
			if m.val.kind == 'b' && m.key == "additionalProperties" {
				out.obj = append(out.obj, m)
			} else if m.val.kind == 'a' && m.key == "items" {
				// Draft-4 tuple form.
				out.obj = append(out.obj, member{"prefixItems", b.cleanList(m.val, depth)})
			} else {
				out.obj = append(out.obj, member{m.key, b.clean(m.val, depth+1)})
			}
		case "prefixItems", "anyOf", "oneOf", "allOf":
			if m.val.kind == 'a' {
				out.obj = append(out.obj, member{m.key, b.cleanList(m.val, depth)})
			}
		}
	}
	describeRequired(out)
	if len(out.obj) == 0 || (len(out.obj) == 1 && out.obj[0].key == "required") {
		// {} (or a description only) means any value; the converter rejects
		// a schema it cannot classify, so spell "any" out.
		return anySchema()
	}
	return out
}

// describeRequired gives every property an object schema requires but does not
// describe a schema of its own, any value: the converter generates described
// properties only, so a call constrained by `{"required":["city"]}` could never
// write the city its schema then demands. Under additionalProperties false no call
// can have it at all; the engine refuses such a tool before anything runs.
func describeRequired(v *oval) {
	req := v.get("required")
	if req == nil || req.kind != 'a' {
		return
	}
	if ap := v.get("additionalProperties"); ap != nil && ap.kind == 'b' && ap.raw == "false" {
		return
	}
	props := v.get("properties")
	if props != nil && props.kind != 'o' {
		return
	}
	var added []member
	for _, r := range req.arr {
		if r.kind != 's' {
			continue
		}
		name := r.strVal()
		if props.get(name) != nil || slices.ContainsFunc(added, func(m member) bool { return m.key == name }) {
			continue
		}
		added = append(added, member{name, anySchema()})
	}
	if len(added) == 0 {
		return
	}
	if props == nil {
		v.set("properties", &oval{kind: 'o', obj: added})
		return
	}
	props.obj = append(props.obj, added...)
}

func (b *schemaBuilder) cleanList(v *oval, depth int) *oval {
	out := &oval{kind: 'a'}
	for _, x := range v.arr {
		out.arr = append(out.arr, b.clean(x, depth+1))
	}
	return out
}

func (b *schemaBuilder) ref(r string) string {
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if strings.HasPrefix(r, p) {
			return "#/$defs/" + b.prefix + r[len(p):]
		}
	}
	if b.rootOf != "" && strings.HasPrefix(r, "#") {
		return "#/$defs/" + b.rootOf + strings.TrimPrefix(r, "#")
	}
	return r
}

func anySchema() *oval {
	return obj("type", arr(str("string"), str("number"), str("boolean"), str("object"), str("array"), str("null")))
}

// defName makes a tool name safe inside a JSON pointer.
func defName(s string) string {
	return strings.NewReplacer("~", "_", "/", "_").Replace(s)
}

func isInteger(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// oval is an ordered JSON value: objects keep their key order.
type oval struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	obj  []member
	arr  []*oval
	raw  string // scalars: JSON text
}

type member struct {
	key string
	val *oval
}

func obj(kv ...any) *oval {
	o := &oval{kind: 'o'}
	for i := 0; i+1 < len(kv); i += 2 {
		o.obj = append(o.obj, member{kv[i].(string), kv[i+1].(*oval)})
	}
	return o
}

func arr(vs ...*oval) *oval { return &oval{kind: 'a', arr: vs} }

func str(s string) *oval { return &oval{kind: 's', raw: string(quoteJSON(s))} }

func num(n int) *oval { return &oval{kind: 'n', raw: strconv.Itoa(n)} }

func (v *oval) strVal() string {
	var s string
	_ = json.Unmarshal([]byte(v.raw), &s)
	return s
}

func (v *oval) get(k string) *oval {
	if v == nil || v.kind != 'o' {
		return nil
	}
	for _, m := range v.obj {
		if m.key == k {
			return m.val
		}
	}
	return nil
}

func (v *oval) set(k string, x *oval) {
	for i := range v.obj {
		if v.obj[i].key == k {
			v.obj[i].val = x
			return
		}
	}
	v.obj = append(v.obj, member{k, x})
}

func (v *oval) walk(fn func(*oval)) {
	fn(v)
	for _, m := range v.obj {
		m.val.walk(fn)
	}
	for _, x := range v.arr {
		x.walk(fn)
	}
}

func (v *oval) marshal() []byte {
	var b bytes.Buffer
	v.write(&b)
	return b.Bytes()
}

func (v *oval) write(b *bytes.Buffer) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, m := range v.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(quoteJSON(m.key))
			b.WriteByte(':')
			m.val.write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, x := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			x.write(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.raw)
	}
}

// parseOrdered decodes JSON keeping object key order.
func parseOrdered(data []byte) (*oval, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (*oval, error) {
	if depth > 128 {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &oval{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				val, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.obj = append(o.obj, member{k, val})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := &oval{kind: 'a'}
			for dec.More() {
				val, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a.arr = append(a.arr, val)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
	case string:
		return str(t), nil
	case json.Number:
		return &oval{kind: 'n', raw: t.String()}, nil
	case bool:
		return &oval{kind: 'b', raw: strconv.FormatBool(t)}, nil
	case nil:
		return &oval{kind: 'z', raw: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}
