package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// tojsonFunc is the name each `| tojson` of a template is compiled into a call of (see
// rewriteFilters); no template names a variable so.
const tojsonFunc = "__hearth_tojson"

var tojsonCallable = jinja.NewCallable("tojson", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	opts, err := jsonOptions(args[1:], kwargs)
	if err != nil {
		return jinja.Undefined(), err
	}
	var b strings.Builder
	if err := opts.encode(&b, args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
})

// dumps is Hugging Face's tojson: Python's json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=sort_keys).
type dumps struct {
	ensureASCII, sortKeys bool
	indent                *string
	itemSep, keySep       string
}

func jsonOptions(positional []jinja.Value, kwargs map[string]jinja.Value) (dumps, error) {
	o := dumps{itemSep: ", ", keySep: ": "}
	// HF's filter takes (ensure_ascii, indent, separators, sort_keys) positionally too.
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	get := func(i int) (jinja.Value, bool) {
		if i < len(positional) {
			return positional[i], true
		}
		v, ok := kwargs[names[i]]
		return v, ok
	}
	for k := range kwargs {
		if !slices.Contains(names, k) {
			return o, fmt.Errorf("tojson: unexpected argument %q", k)
		}
	}
	if v, ok := get(0); ok {
		o.ensureASCII = v.IsTruthy()
	}
	if v, ok := get(1); ok && !v.IsNone() && !v.IsUndefined() {
		var ind string
		switch {
		case v.IsString():
			ind = v.AsString()
		case v.IsInt():
			ind = strings.Repeat(" ", int(max(v.AsInt(), 0)))
		default:
			return o, errors.New("tojson: indent must be a number or a string")
		}
		o.indent = &ind
		// json.dumps's default item separator drops its space when indenting.
		o.itemSep = ","
	}
	if v, ok := get(2); ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return o, errors.New("tojson: separators must be two strings")
		}
		o.itemSep, o.keySep = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	if v, ok := get(3); ok {
		o.sortKeys = v.IsTruthy()
	}
	return o, nil
}

func (o dumps) newline(b *strings.Builder, level int) {
	if o.indent == nil {
		return
	}
	b.WriteByte('\n')
	for range level {
		b.WriteString(*o.indent)
	}
}

func (o dumps) encode(b *strings.Builder, v jinja.Value, level int) error {
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloat(v.AsFloat()))
	case v.IsString():
		o.str(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, level+1)
			if err := o.encode(b, item, level+1); err != nil {
				return err
			}
		}
		o.newline(b, level)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if o.sortKeys {
			keys = slices.Clone(keys)
			slices.Sort(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, level+1)
			o.str(b, k)
			b.WriteString(o.keySep)
			item, _ := d.Get(k)
			if err := o.encode(b, item, level+1); err != nil {
				return err
			}
		}
		o.newline(b, level)
		b.WriteByte('}')
	case v.IsUndefined():
		return errors.New("tojson: Object of type Undefined is not JSON serializable")
	default:
		return errors.New("tojson: value is not JSON serializable")
	}
	return nil
}

// str writes s as json.dumps does: with ensure_ascii off only the quote, the backslash
// and control characters are escaped; with it on, every non-ASCII character too (as
// UTF-16 escapes, surrogate pairs beyond the BMP).
func (o dumps) str(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			var esc string
			switch c {
			case '"':
				esc = `\"`
			case '\\':
				esc = `\\`
			case '\n':
				esc = `\n`
			case '\r':
				esc = `\r`
			case '\t':
				esc = `\t`
			case '\b':
				esc = `\b`
			case '\f':
				esc = `\f`
			default:
				if c < 0x20 {
					esc = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
				}
			}
			if esc != "" {
				b.WriteString(s[start:i])
				b.WriteString(esc)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if o.ensureASCII {
			b.WriteString(s[start:i])
			if r >= 0x10000 {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
			start = i + size
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// pyFloat is Python's repr of a float, which json.dumps writes: the shortest digits
// that read back the same, fixed notation for exponents -4 to 15 (with ".0" on whole
// numbers), scientific otherwise with a signed exponent of at least two digits.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expPart, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < 16 {
		var s string
		switch {
		case exp < 0:
			s = "0." + strings.Repeat("0", -exp-1) + digits
		case exp+1 >= len(digits):
			s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		default:
			s = digits[:exp+1] + "." + digits[exp+1:]
		}
		return sign + s
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}
