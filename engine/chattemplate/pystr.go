package chattemplate

import (
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// printFunc is the name the expression of each output tag is compiled into a call of.
const printFunc = "__hearth_print"

var printCallable = jinja.NewCallable("print", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || args[0].IsString() {
		// Text, nearly every output of a chat template, is written as it is.
		if len(args) == 0 {
			return jinja.NewString(""), nil
		}
		return args[0], nil
	}
	var b strings.Builder
	pyStr(&b, args[0], false)
	return jinja.NewString(b.String()), nil
})

// stringFunc is the name each `| string` of a template is compiled into a call of.
const stringFunc = "__hearth_string"

var stringCallable = jinja.NewCallable("string", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	var b strings.Builder
	pyStr(&b, args[0], false)
	return jinja.NewString(b.String()), nil
})

// pyStr writes v as Python's str() does (repr inside containers): the string filter of
// templates that print tool-call argument values, whose floats must read 1.0 and 1e+20
// as in Python.
func pyStr(b *strings.Builder, v jinja.Value, inside bool) {
	switch {
	case v.IsUndefined():
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := pyFloat(v.AsFloat())
		// Python's repr says inf and nan where JSON says Infinity and NaN.
		switch f {
		case "Infinity":
			f = "inf"
		case "-Infinity":
			f = "-inf"
		case "NaN":
			f = "nan"
		}
		b.WriteString(f)
	case v.IsString():
		if inside {
			pyRepr(b, v.AsString())
		} else {
			b.WriteString(v.AsString())
		}
	case v.IsList():
		b.WriteByte('[')
		for i, item := range v.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			pyStr(b, item, true)
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.OrderedKeys() {
			if i > 0 {
				b.WriteString(", ")
			}
			pyRepr(b, k)
			b.WriteString(": ")
			item, _ := d.Get(k)
			pyStr(b, item, true)
		}
		b.WriteByte('}')
	default:
		b.WriteString(v.String())
	}
}

// pyRepr is Python's repr of a str: single quotes unless the text has a single quote
// and no double one; backslashes, the quote and control characters escaped.
func pyRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatInt(int64(r)+0x100, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
}
