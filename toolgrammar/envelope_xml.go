package toolgrammar

import (
	"bytes"
	"encoding/json"
	"strings"
)

// xmlCall is the state of an XMLParams envelope: <function=NAME> then
// <parameter=KEY>VALUE</parameter> pairs (Qwen3-Coder), or NAME then
// <arg_key>K</arg_key><arg_value>V</arg_value> pairs (GLM). Values are
// typed by the tool's schema.
type xmlCall struct {
	sub     uint8  // where in the call (x* below)
	noWrap  bool   // the call came without its Open wrapper, so no Close follows
	name    []byte // the name as written, then as begun
	key     []byte // the parameter name
	params  int    // parameters written so far
	vType   typeSet
	vStream bool   // the value streams as a JSON string
	vFirst  bool   // nothing of the value seen yet
	vBuf    []byte // a value converted at its close
	typ     map[string]map[string]typeSet
	json    jsonCall // a bare JSON call (Envelope.Bare)
	// checkName, when set, turns the name as written into the call's name,
	// or refuses it with a reason (a harmony message's block: its header
	// named the recipient already).
	checkName func(name string) (string, string)
}

// Sub-states of an XML call.
const (
	xStart uint8 = iota
	xName
	xParams
	xKey
	xValOpen
	xValue
	xAfter // after </function>: Close (sEnvelope)
	xJSON  // a bare JSON call: x.json has the stream
)

func (x *xmlCall) open(p *Parser, o string) {
	p.resetCall()
	x.name = x.name[:0]
	x.key = x.key[:0]
	x.params = 0
	x.noWrap, x.sub = false, xStart
	if o == p.e.NameOpen {
		// Qwen3-Coder sometimes drops the <tool_call> wrapper.
		x.noWrap, x.sub = true, xName
	}
	p.st = sCall
}

func (x *xmlCall) openJSON(p *Parser) {
	x.json.openJSON(p)
	x.sub = xJSON
}

func (x *xmlCall) fail(p *Parser, i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose && !x.noWrap)
	return i, false
}

func (x *xmlCall) step(p *Parser, s string, final bool) (int, bool) {
	switch x.sub {
	case xValue:
		return x.valueStep(p, s, final)
	case xParams:
		return x.paramsStep(p, s, final)
	case xKey:
		return x.keyStep(p, s, final)
	case xValOpen:
		return x.valueOpen(p, s, final)
	case xName:
		return x.nameStep(p, s, final)
	case xStart:
		return x.start(p, s, final)
	case xAfter:
		return x.after(p, s, final)
	case xJSON:
		return x.json.step(p, s, final)
	}
	return 0, true
}

// start skips to the name, past NameOpen.
func (x *xmlCall) start(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if p.e.NameOpen == "" && p.e.NameKey != "" && s[i] == '{' {
		// A hermes JSON object inside the wrapper (Envelope.NameKey set on an
		// xml envelope: Laguna's prompt asks for it, its history shows pairs).
		x.openJSON(p)
		return i, false
	}
	if o := p.e.NameOpen; o != "" {
		full, partial := prefixMatch(s[i:], o, final)
		if partial {
			return i, true
		}
		if !full {
			return x.fail(p, i, "expected "+o)
		}
		i += len(o)
	}
	x.name = x.name[:0]
	x.sub = xName
	return i, false
}

// keyStep reads a parameter name up to KeyClose.
func (x *xmlCall) keyStep(p *Parser, s string, final bool) (int, bool) {
	j, k := p.c.xKeyClose.find(s, final)
	x.key = append(x.key, s[:j]...)
	if len(x.key) > maxKeyLen {
		return x.fail(p, j, "parameter name too long")
	}
	if k < 0 {
		return j, true
	}
	x.sub = xValOpen
	return j + len(p.e.KeyClose), false
}

// nameStep reads the name up to its end and begins the call.
func (x *xmlCall) nameStep(p *Parser, s string, final bool) (int, bool) {
	j, k := p.c.nameEnd.find(s, final)
	x.name = append(x.name, s[:j]...)
	if len(x.name) > maxKeyLen {
		return x.fail(p, j, "call name too long")
	}
	if k < 0 {
		return j, true
	}
	name := strings.TrimSpace(string(x.name))
	if name == "" {
		return x.fail(p, j, "empty call name")
	}
	if x.checkName != nil {
		var reason string
		if name, reason = x.checkName(name); reason != "" {
			return x.fail(p, j, reason)
		}
	}
	d := p.c.nameEnd.ds[k]
	end := j
	if d.act == aNameEnd {
		end += len(d.s)
	}
	p.begin(name, p.at+int64(end))
	x.name = append(x.name[:0], name...)
	p.args = append(p.args[:0], '{')
	x.params = 0
	x.sub = xParams
	return end, false
}

// paramsStep expects the next parameter, or the end of the call.
func (x *xmlCall) paramsStep(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	j, k := p.c.xParams.find(s[i:], final)
	if k < 0 && j == 0 {
		return i, true
	}
	if k < 0 || j != 0 {
		return x.fail(p, i, "unexpected text between parameters")
	}
	d := p.c.xParams.ds[k]
	end := i + len(d.s)
	switch d.act {
	case aKeyOpen:
		x.key = x.key[:0]
		x.sub = xKey
	case aFuncClose:
		p.args = append(p.args, '}')
		p.end(p.at + int64(end))
		x.sub = xAfter
		p.st = sEnvelope
	case aClose:
		p.args = append(p.args, '}')
		p.end(p.at + int64(end))
		p.afterCall()
	}
	return end, false
}

func (x *xmlCall) valueOpen(p *Parser, s string, final bool) (int, bool) {
	e := p.e
	i := 0
	if e.ValueOpen != "" {
		i = skipWS(s)
		if i == len(s) {
			return i, true
		}
		full, partial := prefixMatch(s[i:], e.ValueOpen, final)
		if partial {
			return i, true
		}
		if !full {
			return x.fail(p, i, "expected "+e.ValueOpen)
		}
		i += len(e.ValueOpen)
	}
	x.startValue(p)
	x.sub = xValue
	return i, false
}

func (x *xmlCall) valueStep(p *Parser, s string, final bool) (int, bool) {
	e := p.e
	j, k := p.c.xValClose.find(s, final)
	content, n := s[:j], j
	if x.vFirst && e.TrimValueNewline {
		if content == "" && k < 0 {
			return 0, true
		}
		content = strings.TrimPrefix(content, "\n")
	}
	x.vFirst = false
	if k >= 0 {
		if e.TrimValueNewline {
			content = strings.TrimSuffix(content, "\n")
		}
		x.addValue(p, content)
		x.finishValue(p)
		x.sub = xParams
		return j + len(e.ValueClose), false
	}
	if e.TrimValueNewline && !final && strings.HasSuffix(content, "\n") {
		// The newline before </parameter> is markup: hold it.
		content = content[:len(content)-1]
		n--
	}
	x.addValue(p, content)
	return n, true
}

// startValue opens a parameter value. String-typed values stream as JSON
// string fragments; others are collected and converted at the close.
func (x *xmlCall) startValue(p *Parser) {
	key := strings.TrimSpace(string(x.key))
	x.key = append(x.key[:0], key...)
	x.vType = x.typ[string(x.name)][key]
	x.vStream = x.vType&tString != 0 && x.vType&^(tString|tNull) == 0
	x.vFirst = true
	x.vBuf = x.vBuf[:0]
	if x.vStream {
		x.appendKey(p)
		p.args = append(p.args, '"')
	}
}

func (x *xmlCall) appendKey(p *Parser) {
	if x.params > 0 {
		p.args = append(p.args, ',')
	}
	p.args = append(p.args, '"')
	p.args = appendJSONString(p.args, string(x.key))
	p.args = append(p.args, '"', ':')
}

func (x *xmlCall) addValue(p *Parser, s string) {
	if x.vStream {
		p.args = appendJSONString(p.args, s)
	} else {
		x.vBuf = append(x.vBuf, s...)
	}
}

func (x *xmlCall) finishValue(p *Parser) {
	if x.vStream {
		p.args = append(p.args, '"')
	} else {
		x.appendKey(p)
		p.args = appendTypedValue(p.args, string(x.vBuf), x.vType)
	}
	x.params++
}

// after consumes the closer after </function>.
func (x *xmlCall) after(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	full, partial := prefixMatch(s[i:], p.e.Close, final)
	if partial {
		return i, true
	}
	if full {
		i += len(p.e.Close)
	}
	p.afterCall()
	return i, false
}

// typeSet is the set of JSON types a schema allows.
type typeSet uint8

const (
	tString typeSet = 1 << iota
	tNumber
	tInteger
	tBoolean
	tObject
	tArray
	tNull
)

var typeNames = map[string]typeSet{
	"string": tString, "number": tNumber, "integer": tInteger, "boolean": tBoolean,
	"object": tObject, "array": tArray, "null": tNull,
}

// paramTypes maps tool name -> parameter -> allowed types.
func paramTypes(tools []Tool) map[string]map[string]typeSet {
	m := map[string]map[string]typeSet{}
	for _, t := range tools {
		var sch struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(t.Parameters, &sch) != nil {
			continue
		}
		pm := map[string]typeSet{}
		for k, raw := range sch.Properties {
			pm[k] = schemaTypes(raw, 0)
		}
		m[t.Name] = pm
	}
	return m
}

func schemaTypes(raw json.RawMessage, depth int) typeSet {
	if depth > 8 {
		return 0
	}
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	var ts typeSet
	var one string
	var many []string
	if json.Unmarshal(s.Type, &one) == nil {
		ts |= typeNames[one]
	} else if json.Unmarshal(s.Type, &many) == nil {
		for _, n := range many {
			ts |= typeNames[n]
		}
	}
	for _, alt := range append(s.AnyOf, s.OneOf...) {
		ts |= schemaTypes(alt, depth+1)
	}
	vals := s.Enum
	if len(s.Const) > 0 {
		vals = append(vals, s.Const)
	}
	for _, v := range vals {
		ts |= jsonKind(bytes.TrimSpace(v))
	}
	return ts
}

func jsonKind(v []byte) typeSet {
	if len(v) == 0 {
		return 0
	}
	switch v[0] {
	case '"':
		return tString
	case '{':
		return tObject
	case '[':
		return tArray
	case 't', 'f':
		return tBoolean
	case 'n':
		return tNull
	}
	return tNumber
}

// appendTypedValue converts an XML parameter value by its schema types:
// JSON when the value parses as an allowed type, a string otherwise.
func appendTypedValue(b []byte, v string, ts typeSet) []byte {
	v = validUTF8(v)
	t := strings.TrimSpace(v)
	if t != "" && json.Valid([]byte(t)) {
		k := jsonKind([]byte(t))
		ok := ts == 0 || ts&k != 0 || (k == tNumber && ts&tInteger != 0)
		if ok || ts&tString == 0 {
			var c bytes.Buffer
			_ = json.Compact(&c, []byte(t))
			return append(b, c.Bytes()...)
		}
	} else if ts&tBoolean != 0 && (strings.EqualFold(t, "true") || strings.EqualFold(t, "false")) {
		return append(b, strings.ToLower(t)...)
	} else if ts&tNull != 0 && (strings.EqualFold(t, "none") || strings.EqualFold(t, "null")) {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = appendJSONString(b, v)
	return append(b, '"')
}
