package toolgrammar

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// InputStream turns the arguments of a custom tool call, as they stream (the
// ArgumentsDelta fragments of its JSON object, cut anywhere), into its raw input as it
// streams: the decoded characters of the top-level "input" string, as soon as they are
// certain. Finish reconciles the result with the call's canonical arguments.
type InputStream struct {
	depth     int
	expectKey bool // at depth 1, the next string is a key
	afterKey  bool // at depth 1, the value after ':' belongs to key
	inString  bool
	isInput   bool // the string being read is the value of "input"
	isKey     bool
	key       strings.Builder
	lastKey   string
	esc       bool
	hex       []byte // digits of a \u escape being read
	high      rune   // a high surrogate waiting for its pair
	sent      strings.Builder
}

// Feed consumes a fragment of the arguments and returns the input text it completes.
func (s *InputStream) Feed(fragment string) string {
	var out strings.Builder
	for i := 0; i < len(fragment); {
		c := fragment[i]
		if s.inString {
			n := s.stringByte(fragment[i:], &out)
			i += n
			continue
		}
		i++
		switch c {
		case '{', '[':
			s.depth++
			s.expectKey = s.depth == 1 && c == '{'
			s.afterKey = false
		case '}', ']':
			s.depth--
		case ',':
			if s.depth == 1 {
				s.expectKey = true
			}
		case ':':
			if s.depth == 1 {
				s.afterKey = true
			}
		case '"':
			s.inString = true
			s.isKey = s.depth == 1 && s.expectKey
			s.isInput = s.depth == 1 && s.afterKey && s.lastKey == "input" && !s.isKey
			s.key.Reset()
			s.expectKey, s.afterKey = false, false
		default:
			if s.depth == 1 && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				s.afterKey = false // a non-string value
			}
		}
	}
	text := out.String()
	s.sent.WriteString(text)
	return text
}

// stringByte reads one unit (a run of plain bytes, or one escape byte) of a string and
// returns how many bytes it consumed.
func (s *InputStream) stringByte(b string, out *strings.Builder) int {
	emit := func(r rune) {
		if s.high != 0 {
			if utf16.IsSurrogate(r) && r >= 0xDC00 {
				r = utf16.DecodeRune(s.high, r)
				s.high = 0
			} else {
				s.write(utf8.RuneError, out)
				s.high = 0
			}
		} else if utf16.IsSurrogate(r) && r < 0xDC00 {
			s.high = r
			return
		}
		s.write(r, out)
	}
	c := b[0]
	switch {
	case s.hex != nil:
		s.hex = append(s.hex, c)
		if len(s.hex) == 4 {
			v, err := strconv.ParseUint(string(s.hex), 16, 32)
			s.hex = nil
			if err != nil {
				v = utf8.RuneError
			}
			emit(rune(v))
		}
		return 1
	case s.esc:
		s.esc = false
		switch c {
		case 'u':
			s.hex = []byte{}
		case 'n':
			emit('\n')
		case 't':
			emit('\t')
		case 'r':
			emit('\r')
		case 'b':
			emit('\b')
		case 'f':
			emit('\f')
		default: // " \ /
			emit(rune(c))
		}
		return 1
	case c == '\\':
		s.esc = true
		return 1
	case c == '"':
		s.inString = false
		if s.high != 0 {
			s.write(utf8.RuneError, out)
			s.high = 0
		}
		if s.isKey {
			s.lastKey = s.key.String()
		}
		s.isInput, s.isKey = false, false
		return 1
	}
	// A run of plain bytes (the fragments are valid UTF-8, so runs end on runes).
	j := 0
	for j < len(b) && b[j] != '"' && b[j] != '\\' {
		j++
	}
	if s.high != 0 {
		s.write(utf8.RuneError, out)
		s.high = 0
	}
	s.writeString(b[:j], out)
	return j
}

func (s *InputStream) write(r rune, out *strings.Builder) {
	switch {
	case s.isInput:
		out.WriteRune(r)
	case s.isKey:
		s.key.WriteRune(r)
	}
}

func (s *InputStream) writeString(t string, out *strings.Builder) {
	switch {
	case s.isInput:
		out.WriteString(t)
	case s.isKey:
		s.key.WriteString(t)
	}
}

// ErrInputDiverged is returned by Finish when the finished arguments' input does not
// continue what was streamed (a model that wrote "input" twice).
var ErrInputDiverged = errors.New(`the finished "input" differs from the text streamed for it`)

// Finish reads the input from the call's canonical arguments and returns what of it
// was not streamed yet.
func (s *InputStream) Finish(arguments string) (input, rest string, err error) {
	input, err = FreeformInput(arguments)
	if err != nil {
		return "", "", err
	}
	sent := s.sent.String()
	if !strings.HasPrefix(input, sent) {
		return input, "", ErrInputDiverged
	}
	return input, input[len(sent):], nil
}
