package toolgrammar

import (
	"errors"
	"fmt"
	"strings"
)

// action is what the parser does when a delimiter matches.
type action uint8

const (
	aStrip action = iota + 1
	aReasonOpen
	aReasonClose
	aCallOpen
	aGroupOpen
	aGroupClose
	aClose
	aNameEnd
	aIDMarker
	aArgsMarker
	aKeyOpen
	aFuncClose
	aHStart
	aHChannel
	aHMessage
	aHEnd
	aStop // stop before the delimiter without consuming it
)

type delim struct {
	s   string
	act action
}

// delimSet finds the first of several delimiters in a string, or the start
// of a suffix that could still become one.
type delimSet struct {
	first [256]bool
	one   int // the only first byte, or -1
	ds    []delim
}

func newDelimSet(ds ...delim) *delimSet {
	d := &delimSet{one: -1}
	seen := map[string]bool{}
	for _, x := range ds {
		if x.s == "" || seen[x.s] {
			continue
		}
		seen[x.s] = true
		d.ds = append(d.ds, x)
		d.first[x.s[0]] = true
	}
	n := 0
	for c := range d.first {
		if d.first[c] {
			n++
			d.one = c
		}
	}
	if n != 1 {
		d.one = -1
	}
	return d
}

// find returns (i, k): delimiter ds[k] matches at s[i:]; or k == -1 and
// i < len(s) when s[i:] could still grow into a delimiter (only when not
// final); or (len(s), -1) when s holds no delimiter. When delimiters share a
// prefix the longest full match wins, and a full match waits while a longer
// delimiter could still match.
func (d *delimSet) find(s string, final bool) (int, int) {
	i := 0
	for i < len(s) {
		if d.one >= 0 {
			j := strings.IndexByte(s[i:], byte(d.one))
			if j < 0 {
				return len(s), -1
			}
			i += j
		} else {
			for i < len(s) && !d.first[s[i]] {
				i++
			}
			if i == len(s) {
				return i, -1
			}
		}
		rest := s[i:]
		best, partial := -1, false
		for k := range d.ds {
			ds := d.ds[k].s
			if ds[0] != rest[0] {
				continue
			}
			if len(rest) >= len(ds) {
				if rest[:len(ds)] == ds && (best < 0 || len(ds) > len(d.ds[best].s)) {
					best = k
				}
			} else if !final && ds[:len(rest)] == rest {
				partial = true
			}
		}
		if partial {
			return i, -1
		}
		if best >= 0 {
			return i, best
		}
		i++
	}
	return len(s), -1
}

// prefixMatch tells whether s starts with d (full), or s is a proper prefix
// of d and more input may complete it (partial).
func prefixMatch(s, d string, final bool) (full, partial bool) {
	if len(s) >= len(d) {
		return s[:len(d)] == d, false
	}
	return false, !final && d[:len(s)] == s
}

type compiled struct {
	text      *delimSet // outside anything
	reason    *delimSet // inside reasoning
	skip      *delimSet // resynchronising after a malformed call
	afterCall *delimSet // Close after a JSON object call
	group     *delimSet // inside a group of calls
	nameEnd   *delimSet // NameJSON/XML name terminators
	argsMark  *delimSet // NameJSON: the args marker after a call id
	xParams   *delimSet // XML: what may follow a parameter
	xKeyClose *delimSet
	xValClose *delimSet
	hHeader   *delimSet // harmony: end of a header
	hBody     *delimSet // harmony: end of a message body
	hAfter    *delimSet // harmony: after a call's JSON
	gString   *delimSet // Gemma: what ends a string value
	nameKey   string
	argsKey   string
	hasClose  bool
}

func (f *Format) compile() error {
	e := &f.Tools
	c := &compiled{nameKey: e.NameKey, argsKey: e.ArgsKey, hasClose: e.Close != ""}
	if c.nameKey == "" {
		c.nameKey = "name"
	}
	if c.argsKey == "" {
		c.argsKey = "arguments"
	}
	var text, reason []delim
	// Stop strings normally end generation before they are written; when
	// one reaches the output anyway it is markup, not prose.
	for _, s := range append(append([]string(nil), f.Strip...), f.Stop...) {
		text = append(text, delim{s, aStrip})
		reason = append(reason, delim{s, aStrip})
	}
	for i, cp := range f.ChatParsers {
		if cp.Name == "" {
			return fmt.Errorf("chat_parsers[%d] has no name", i)
		}
	}
	if r := f.Reasoning; r != nil {
		if r.Open == "" || r.Close == "" {
			return errors.New("reasoning needs open and close")
		}
		text = append(text, delim{r.Open, aReasonOpen}, delim{r.Close, aReasonClose})
		reason = append(reason, delim{r.Open, aReasonOpen}, delim{r.Close, aReasonClose})
	}
	var skip []delim
	switch e.Kind {
	case "":
		// A format without tools: only reasoning and text.
	case JSONObject, JSONArray, NameJSON, XMLParams:
		if len(e.Open) == 0 {
			return fmt.Errorf("%s envelope needs open", e.Kind)
		}
		for _, o := range e.Open {
			text = append(text, delim{o, aCallOpen})
			skip = append(skip, delim{o, aStop})
		}
		if e.GroupOpen != "" {
			text = append(text, delim{e.GroupOpen, aGroupOpen})
			skip = append(skip, delim{e.GroupOpen, aStop})
			c.group = newDelimSet(append([]delim{{e.GroupClose, aGroupClose}}, openDelims(e.Open)...)...)
		}
		if e.GroupClose != "" && isMarkup(e.GroupClose) {
			text = append(text, delim{e.GroupClose, aStrip})
		}
		if e.Close != "" {
			if isMarkup(e.Close) {
				// A stray closer is markup, never message text.
				text = append(text, delim{e.Close, aStrip})
			}
			skip = append(skip, delim{e.Close, aClose})
			c.afterCall = newDelimSet(delim{e.Close, aClose})
		}
		switch e.Kind {
		case NameJSON:
			if len(e.NameEnd) == 0 {
				return errors.New("name_json envelope needs name_end")
			}
			var ne []delim
			for _, s := range e.NameEnd {
				a := aNameEnd
				if s == e.IDMarker {
					a = aIDMarker
				} else if s == e.ArgsMarker {
					a = aArgsMarker
				}
				ne = append(ne, delim{s, a})
			}
			c.nameEnd = newDelimSet(ne...)
			if e.IDMarker != "" {
				if e.ArgsMarker == "" {
					return errors.New("id_marker needs args_marker")
				}
				c.argsMark = newDelimSet(delim{e.ArgsMarker, aArgsMarker})
			}
		case XMLParams:
			if err := c.compileXMLParams(e); err != nil {
				return err
			}
		}
	case GemmaCall, PythonCall:
		if len(e.Open) == 0 || e.Close == "" || (e.Kind == GemmaCall && e.StringDelim == "") {
			return errors.New("gemma_call and python_call envelopes need open and close; gemma_call string_delim")
		}
		for _, o := range e.Open {
			text = append(text, delim{o, aCallOpen})
			skip = append(skip, delim{o, aStop})
		}
		// A stray closer is markup; a malformed call resumes after its closer.
		text = append(text, delim{e.Close, aStrip})
		skip = append(skip, delim{e.Close, aClose})
		c.hasClose = true
		if e.Kind == GemmaCall {
			c.gString = newDelimSet(delim{e.StringDelim, aClose}, delim{e.Close, aStop})
		}
	case Harmony:
		if e.Start == "" || e.Message == "" || len(e.End) == 0 || (e.Channel == "") == (e.ReasoningRecipient == "") {
			return errors.New("harmony envelope needs start, message, end, and channel or reasoning_recipient")
		}
		if e.Channel != "" {
			if e.ReasoningChannel == "" {
				e.ReasoningChannel = "analysis"
			}
			if e.Recipient == "" {
				e.Recipient = "functions."
			}
		}
		text = append(text, delim{e.Start, aHStart}, delim{e.Channel, aHChannel})
		if e.KeyOpen != "" {
			// Calls are XML parameter blocks (Glimmer): Open[0] starts one.
			if len(e.Open) == 0 || e.NameOpen == "" || e.NameClose == "" {
				return errors.New("harmony envelope with XML calls needs open, name_open and name_close")
			}
			if err := c.compileXMLParams(e); err != nil {
				return err
			}
			if e.Close != "" {
				skip = append(skip, delim{e.Close, aClose})
			}
		}
		var body []delim
		for _, s := range e.End {
			text = append(text, delim{s, aStrip})
			body = append(body, delim{s, aHEnd})
			skip = append(skip, delim{s, aClose})
		}
		body = append(body, delim{e.Start, aStop})
		skip = append(skip, delim{e.Start, aStop})
		c.hBody = newDelimSet(body...)
		c.hAfter = newDelimSet(body...)
		c.hHeader = newDelimSet(delim{e.Message, aHMessage}, delim{e.Start, aStop})
		// Reasoning in harmony is a channel, not delimiters.
		reason = nil
	default:
		return fmt.Errorf("unknown envelope kind %q", e.Kind)
	}
	c.text = newDelimSet(text...)
	c.reason = newDelimSet(reason...)
	c.skip = newDelimSet(skip...)
	f.compiled = c
	return nil
}

// compileXMLParams compiles the delimiters of XML parameters (an xml
// envelope's, or a harmony envelope's calls).
func (c *compiled) compileXMLParams(e *Envelope) error {
	if e.KeyOpen == "" || e.KeyClose == "" || e.ValueClose == "" {
		return errors.New("xml envelope needs key_open, key_close and value_close")
	}
	if e.NameClose != "" {
		c.nameEnd = newDelimSet(delim{e.NameClose, aNameEnd})
	} else {
		c.nameEnd = newDelimSet(delim{"\n", aNameEnd}, delim{e.KeyOpen, aKeyOpen}, delim{e.Close, aClose}, delim{e.FunctionClose, aFuncClose})
	}
	c.xParams = newDelimSet(delim{e.KeyOpen, aKeyOpen}, delim{e.FunctionClose, aFuncClose}, delim{e.Close, aClose})
	c.xKeyClose = newDelimSet(delim{e.KeyClose, aClose})
	c.xValClose = newDelimSet(delim{e.ValueClose, aClose})
	return nil
}

func openDelims(open []string) []delim {
	var ds []delim
	for _, o := range open {
		ds = append(ds, delim{o, aCallOpen})
	}
	return ds
}

// IsMarkup tells a delimiter that cannot be ordinary prose from one that can, like
// Command-R's "Action: ```json" or a bare "{": an engine may end generation at the
// first kind (a stop string) without cutting ordinary text short.
func IsMarkup(s string) bool { return isMarkup(s) }

// isMarkup tells a delimiter that cannot be ordinary prose (so a stray one
// may be removed from text) from one that can, like Command-R's "```".
func isMarkup(s string) bool {
	return len(s) >= 3 && (s[0] == '<' || s[0] == '[')
}
