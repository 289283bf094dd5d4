package toolgrammar

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Sub-states of sXML: <function=NAME> then <parameter=KEY>VALUE</parameter>
// pairs (Qwen3-Coder), or NAME then <arg_key>K</arg_key><arg_value>V</arg_value>
// pairs (GLM).
const (
	xStart uint8 = iota
	xName
	xParams
	xKey
	xValOpen
	xValue
)

func (p *Parser) xmlFail(i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose && !p.noWrap)
	return i, false
}

func (p *Parser) stepXML(s string, final bool) (int, bool) {
	e := p.e
	switch p.sub {
	case xStart:
		i := skipWS(s)
		if i == len(s) {
			return i, true
		}
		if e.NameOpen != "" {
			full, partial := prefixMatch(s[i:], e.NameOpen, final)
			if partial {
				return i, true
			}
			if !full {
				return p.xmlFail(i, "expected "+e.NameOpen)
			}
			i += len(e.NameOpen)
		}
		p.name = p.name[:0]
		p.sub = xName
		return i, false
	case xName:
		j, k := p.c.nameEnd.find(s, final)
		p.name = append(p.name, s[:j]...)
		if len(p.name) > maxKeyLen {
			return p.xmlFail(j, "call name too long")
		}
		if k < 0 {
			return j, true
		}
		name := strings.TrimSpace(string(p.name))
		if name == "" {
			return p.xmlFail(j, "empty call name")
		}
		d := p.c.nameEnd.ds[k]
		end := j
		if d.act == aNameEnd {
			end += len(d.s)
		}
		p.begin(name, p.at+int64(end))
		p.args = append(p.args[:0], '{')
		p.params = 0
		p.sub = xParams
		return end, false
	case xParams:
		i := skipWS(s)
		if i == len(s) {
			return i, true
		}
		j, k := p.c.xParams.find(s[i:], final)
		if k < 0 && j == 0 {
			return i, true
		}
		if k < 0 || j != 0 {
			return p.xmlFail(i, "unexpected text between parameters")
		}
		d := p.c.xParams.ds[k]
		end := i + len(d.s)
		switch d.act {
		case aKeyOpen:
			p.key = p.key[:0]
			p.sub = xKey
		case aFuncClose:
			p.args = append(p.args, '}')
			p.end(p.at + int64(end))
			p.st = sAfterXML
		case aClose:
			p.args = append(p.args, '}')
			p.end(p.at + int64(end))
			p.afterCall()
		}
		return end, false
	case xKey:
		j, k := p.c.xKeyClose.find(s, final)
		p.key = append(p.key, s[:j]...)
		if len(p.key) > maxKeyLen {
			return p.xmlFail(j, "parameter name too long")
		}
		if k < 0 {
			return j, true
		}
		p.sub = xValOpen
		return j + len(e.KeyClose), false
	case xValOpen:
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
				return p.xmlFail(i, "expected "+e.ValueOpen)
			}
			i += len(e.ValueOpen)
		}
		p.startValue()
		p.sub = xValue
		return i, false
	case xValue:
		j, k := p.c.xValClose.find(s, final)
		content, n := s[:j], j
		if p.vFirst && e.TrimValueNewline {
			if content == "" && k < 0 {
				return 0, true
			}
			content = strings.TrimPrefix(content, "\n")
		}
		p.vFirst = false
		if k >= 0 {
			if e.TrimValueNewline {
				content = strings.TrimSuffix(content, "\n")
			}
			p.addValue(content)
			p.finishValue()
			p.sub = xParams
			return j + len(e.ValueClose), false
		}
		if e.TrimValueNewline && !final && strings.HasSuffix(content, "\n") {
			// The newline before </parameter> is markup: hold it.
			content = content[:len(content)-1]
			n--
		}
		p.addValue(content)
		return n, true
	}
	return 0, true
}

// startValue opens a parameter value. String-typed values stream as JSON
// string fragments; others are collected and converted at the close.
func (p *Parser) startValue() {
	key := strings.TrimSpace(string(p.key))
	p.key = append(p.key[:0], key...)
	p.vType = p.typ[string(p.name)][key]
	p.vStream = p.vType&tString != 0 && p.vType&^(tString|tNull) == 0
	p.vFirst = true
	p.vBuf = p.vBuf[:0]
	if p.vStream {
		p.appendKey()
		p.args = append(p.args, '"')
	}
}

func (p *Parser) appendKey() {
	if p.params > 0 {
		p.args = append(p.args, ',')
	}
	p.args = append(p.args, '"')
	p.args = appendJSONString(p.args, string(p.key))
	p.args = append(p.args, '"', ':')
}

func (p *Parser) addValue(s string) {
	if p.vStream {
		p.args = appendJSONString(p.args, s)
	} else {
		p.vBuf = append(p.vBuf, s...)
	}
}

func (p *Parser) finishValue() {
	if p.vStream {
		p.args = append(p.args, '"')
	} else {
		p.appendKey()
		p.args = appendTypedValue(p.args, string(p.vBuf), p.vType)
	}
	p.params++
}

// stepAfterXML consumes the closer after </function>.
func (p *Parser) stepAfterXML(s string, final bool) (int, bool) {
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
