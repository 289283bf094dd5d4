package filetext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

func init() {
	// pdfcpu would otherwise write its configuration under the user's configuration
	// directory on first use; hearth reads PDFs and needs none.
	model.ConfigPath = "disable"
}

// readPDF extracts a PDF's text: pdfcpu parses the file (cross references, object
// streams, filters, encryption without a user password); the page tree is walked here
// and each page's content streams are read by pdfText. Text drawn with fonts whose
// codes are not characters (CID fonts read only through a ToUnicode map) is not
// recovered: such a PDF, like a scanned one, is ErrNoText.
//
// A PDF is a program for unpacking: a megabyte of Flate data can stand for
// gigabytes, and a page tree can name one page a hundred thousand times. pdfcpu
// unpacks every stream it decodes whole, in memory, so what it may unpack is measured
// first (limits.go): every stream of the file, through its filters, counted to a
// discarding writer that stops at the file's bound, before pdfcpu reads it; each
// page's content again, before it is decoded. The page tree is walked once, each
// object visited at most once, under bounds of pages and objects, and all of it
// under a deadline and the caller's context.
func readPDF(ctx context.Context, data []byte) (res Result, err error) {
	defer func() {
		// A damaged file must be one file's error, never the server's panic.
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("%w: the PDF cannot be parsed (%v)", ErrCorrupt, r)
		}
	}()
	lim := currentLimits()
	release, err := reserveUnpacking(ctx, lim.UnpackedBytes)
	if err != nil {
		return Result{}, err
	}
	defer release()
	ctx, cancel := context.WithTimeoutCause(ctx, lim.ParseTime, errParseTime)
	defer cancel()
	defer func() {
		// Past the deadline, whatever failed failed because of it.
		if err != nil && context.Cause(ctx) == errParseTime {
			res, err = Result{}, fmt.Errorf("%w: reading the PDF took longer than %s", ErrTooComplex, lim.ParseTime)
		}
	}()
	if err := scanStreams(ctx, data, lim.UnpackedBytes); err != nil {
		return Result{}, err
	}
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	conf.Cmd = model.EXTRACTCONTENT
	conf.Optimize = false
	pctx, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(data), conf)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, context.Cause(ctx)
		}
		return Result{}, fmt.Errorf("%w: the PDF cannot be read (%s)", ErrCorrupt, firstLine(err.Error()))
	}
	pageDicts, err := pdfPages(ctx, pctx.XRefTable, lim)
	if err != nil {
		return Result{}, err
	}
	if len(pageDicts) == 0 {
		return Result{}, fmt.Errorf("%w: the PDF has no pages", ErrCorrupt)
	}
	var pages []string
	empty := 0 // pages without a content stream: blank, or lost in a damaged file
	left := lim.UnpackedBytes
	for i, d := range pageDicts {
		stream, err := pageContent(ctx, pctx.XRefTable, d, &left)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, context.Cause(ctx)
			}
			if errors.Is(err, ErrTooLarge) {
				return Result{}, err
			}
			return Result{}, fmt.Errorf("%w: page %d cannot be read (%s)", ErrCorrupt, i+1, firstLine(err.Error()))
		}
		if len(bytes.TrimSpace(stream)) == 0 {
			empty++
			continue
		}
		if text := strings.TrimSpace(pdfText(stream)); text != "" {
			pages = append(pages, text)
		}
	}
	text := strings.Join(pages, "\n\n")
	if empty == len(pageDicts) {
		return Result{}, fmt.Errorf("%w: none of its %d pages has content (a truncated or damaged file, or blank pages)", ErrCorrupt, empty)
	}
	if !readable(text) {
		return Result{}, fmt.Errorf("%w: the PDF holds no text layer hearth can read (a scan, or fonts without a Unicode map)", ErrNoText)
	}
	return Result{Kind: Text, Text: text, Source: "pdf", Pages: len(pageDicts)}, nil
}

// pdfPages walks the page tree from the catalog, in order, and returns the pages'
// dictionaries. Each object is visited once: a kid named again (or a cycle) is
// skipped, so a tree that lists one page many times costs one look-up per entry,
// and the walk stops with ErrTooComplex past lim's pages, or past lim's objects
// visited or kids named.
func pdfPages(ctx context.Context, xt *model.XRefTable, lim Limits) ([]types.Dict, error) {
	root, err := xt.Catalog()
	if err != nil || root == nil {
		return nil, fmt.Errorf("%w: the PDF has no catalog", ErrCorrupt)
	}
	top, ok := root.Find("Pages")
	if !ok {
		return nil, fmt.Errorf("%w: the PDF has no page tree", ErrCorrupt)
	}
	seen := map[int]bool{} // the objects pushed, so none is visited twice
	var pages []types.Dict
	visited, entries := 0, 0 // objects visited, and kids named
	// stack holds the nodes still to visit, the next one last.
	stack := []types.Object{top}
	if ir, ok := top.(types.IndirectRef); ok {
		seen[ir.ObjectNumber.Value()] = true
	}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visited++; visited > lim.PDFObjects {
			return nil, fmt.Errorf("%w: its page tree has more than %d objects", ErrTooComplex, lim.PDFObjects)
		}
		if visited%1024 == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		d, err := xt.DereferenceDict(o)
		if err != nil || d == nil {
			continue // a damaged node: its pages are lost, like a damaged page's text
		}
		kids, hasKids := d.Find("Kids")
		if t := d.Type(); (t != nil && *t == "Page") || (t == nil && !hasKids) {
			if len(pages) == lim.PDFPages {
				return nil, fmt.Errorf("%w: it has more than %d pages", ErrTooComplex, lim.PDFPages)
			}
			pages = append(pages, d)
			continue
		}
		arr, err := xt.DereferenceArray(kids)
		if err != nil {
			continue
		}
		// Every entry counts, repeated or not: a tree that names its pages many
		// more times than it could hold is not a document but a load; one that
		// repeats a few is read with each page once.
		if entries += len(arr); entries > lim.PDFObjects {
			return nil, fmt.Errorf("%w: its page tree has more than %d entries", ErrTooComplex, lim.PDFObjects)
		}
		for i := len(arr) - 1; i >= 0; i-- {
			if ir, ok := arr[i].(types.IndirectRef); ok {
				if seen[ir.ObjectNumber.Value()] {
					continue
				}
				seen[ir.ObjectNumber.Value()] = true
			}
			if len(stack) == lim.PDFObjects {
				return nil, fmt.Errorf("%w: its page tree has more than %d objects", ErrTooComplex, lim.PDFObjects)
			}
			stack = append(stack, arr[i])
		}
	}
	return pages, nil
}

// pageContent returns a page's content, its streams measured against left (the
// bytes the file's pages may still unpack) before each is decoded.
func pageContent(ctx context.Context, xt *model.XRefTable, d types.Dict, left *int64) ([]byte, error) {
	o, ok := d.Find("Contents")
	if !ok || o == nil {
		return nil, nil
	}
	o, err := xt.Dereference(o)
	if err != nil || o == nil {
		return nil, err
	}
	var streams []types.Object
	switch o := o.(type) {
	case types.StreamDict:
		streams = []types.Object{o}
	case types.Array:
		streams = o
	default:
		return nil, nil
	}
	var out []byte
	for _, s := range streams {
		if s == nil {
			continue
		}
		sd, _, err := xt.DereferenceStreamDict(s)
		if err != nil {
			return nil, err
		}
		if sd == nil {
			continue
		}
		var names []string
		for _, f := range sd.FilterPipeline {
			names = append(names, f.Name)
		}
		n, err := unpackedSize(ctx, sd.Raw, names, *left)
		if err != nil {
			return nil, err
		}
		*left -= n
		if err := sd.Decode(); err != nil && !strings.HasPrefix(err.Error(), "flate: corrupt input before offset") {
			// A stream cut short keeps what was decoded of it, as pdfcpu's relaxed
			// reading does; any other failure is the page's.
			return nil, err
		}
		out = append(out, sd.Content...)
		out = append(out, '\n')
	}
	return out, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// readable reports whether text is mostly letters, digits, punctuation and spaces:
// the codes of a font without a Unicode map read as control characters and symbols.
func readable(text string) bool {
	if strings.TrimSpace(text) == "" {
		return false
	}
	good, all := 0, 0
	for _, r := range text {
		all++
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) || unicode.IsPunct(r) {
			good++
		}
	}
	return good*10 >= all*8
}

// pdfText reads the text a page's content stream shows: the strings of Tj, TJ, ' and
// ", with a line break where the text moves to a new line and a space where TJ moves a
// word apart.
func pdfText(stream []byte) string {
	var out strings.Builder
	var operands []any // strings, numbers, and arrays of them
	lastY, haveY := 0.0, false
	newline := func() {
		s := out.String()
		if s != "" && !strings.HasSuffix(s, "\n") {
			out.WriteByte('\n')
		}
	}
	show := func(v any) {
		switch v := v.(type) {
		case string:
			out.WriteString(v)
		case []any:
			for _, e := range v {
				switch e := e.(type) {
				case string:
					out.WriteString(e)
				case float64:
					// A move left of more than a fifth of an em separates words.
					if e < -200 {
						out.WriteByte(' ')
					}
				}
			}
		}
	}
	lex := pdfLexer{src: stream}
	for {
		tok, ok := lex.next()
		if !ok {
			break
		}
		if op, isOp := tok.(pdfOp); isOp {
			switch string(op) {
			case "Tj", "TJ":
				if len(operands) > 0 {
					show(operands[len(operands)-1])
				}
			case "'", "\"":
				newline()
				if len(operands) > 0 {
					show(operands[len(operands)-1])
				}
			case "T*":
				newline()
			case "Td", "TD":
				if len(operands) >= 2 {
					if ty, ok := operands[len(operands)-1].(float64); ok && ty != 0 {
						newline()
					} else if tx, ok := operands[len(operands)-2].(float64); ok && tx > 0 {
						out.WriteByte(' ')
					}
				}
			case "Tm":
				if len(operands) >= 6 {
					if y, ok := operands[len(operands)-1].(float64); ok {
						if haveY && y != lastY {
							newline()
						}
						lastY, haveY = y, true
					}
				}
			case "ET":
				out.WriteByte(' ')
			case "BI":
				lex.skipInlineImage()
			}
			operands = operands[:0]
			continue
		}
		operands = append(operands, tok)
	}
	return tidySpaces(out.String())
}

// tidySpaces collapses runs of spaces and trims each line.
func tidySpaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return tidyLines(strings.Join(lines, "\n"))
}

// pdfOp is an operator of a content stream.
type pdfOp string

// pdfLexer reads the tokens of a content stream: numbers (float64), strings (string,
// decoded), arrays ([]any), names and dictionaries (skipped as nil), and operators.
type pdfLexer struct {
	src   []byte
	pos   int
	depth int // arrays open
}

// maxArrayDepth bounds nested arrays: each level is a call of next, and a content
// stream of '[' alone would otherwise recurse past the goroutine's stack limit (a
// fatal error, not a panic). Deeper brackets are read as if absent.
const maxArrayDepth = 32

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool { return strings.IndexByte("()<>[]{}/%", c) >= 0 }

func (l *pdfLexer) skipSpace() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if isPDFSpace(c) {
			l.pos++
		} else if c == '%' {
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.pos++
			}
		} else {
			return
		}
	}
}

func (l *pdfLexer) next() (any, bool) {
	l.skipSpace()
	if l.pos >= len(l.src) {
		return nil, false
	}
	c := l.src[l.pos]
	switch {
	case c == '(':
		l.pos++
		return decodePDFString(l.literal()), true
	case c == '<' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '<':
		l.pos += 2
		l.skipDict()
		return nil, true
	case c == '<':
		l.pos++
		return decodePDFString(l.hex()), true
	case c == '[' && l.depth >= maxArrayDepth:
		l.pos++
		return nil, true
	case c == '[':
		l.pos++
		l.depth++
		defer func() { l.depth-- }()
		var arr []any
		for {
			l.skipSpace()
			if l.pos >= len(l.src) {
				return arr, true
			}
			if l.src[l.pos] == ']' {
				l.pos++
				return arr, true
			}
			v, ok := l.next()
			if !ok {
				return arr, true
			}
			if _, isOp := v.(pdfOp); isOp {
				continue // malformed; keep reading the array
			}
			arr = append(arr, v)
		}
	case c == '/':
		l.pos++
		for l.pos < len(l.src) && !isPDFSpace(l.src[l.pos]) && !isPDFDelim(l.src[l.pos]) {
			l.pos++
		}
		return nil, true
	case c == ']' || c == '>' || c == ')' || c == '{' || c == '}':
		l.pos++
		return nil, true
	}
	start := l.pos
	for l.pos < len(l.src) && !isPDFSpace(l.src[l.pos]) && !isPDFDelim(l.src[l.pos]) {
		l.pos++
	}
	word := string(l.src[start:l.pos])
	if f, ok := parseNumber(word); ok {
		return f, true
	}
	return pdfOp(word), true
}

func parseNumber(s string) (float64, bool) {
	var f float64
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+') }) >= 0 {
		return 0, false
	}
	if _, err := fmt.Sscanf(s, "%g", &f); err != nil {
		return 0, false
	}
	return f, true
}

// literal reads a literal string after its '(' up to the matching ')'.
func (l *pdfLexer) literal() []byte {
	var b []byte
	depth := 1
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		l.pos++
		switch c {
		case '\\':
			if l.pos >= len(l.src) {
				return b
			}
			e := l.src[l.pos]
			l.pos++
			switch e {
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case '\r':
				if l.pos < len(l.src) && l.src[l.pos] == '\n' {
					l.pos++
				}
			case '\n':
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '7'; k++ {
						v = v*8 + int(l.src[l.pos]-'0')
						l.pos++
					}
					b = append(b, byte(v))
				} else {
					b = append(b, e)
				}
			}
		case '(':
			depth++
			b = append(b, c)
		case ')':
			depth--
			if depth == 0 {
				return b
			}
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return b
}

// hex reads a hex string after its '<' up to '>'.
func (l *pdfLexer) hex() []byte {
	var b []byte
	var hi byte
	half := false
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		l.pos++
		if c == '>' {
			break
		}
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			continue
		}
		if half {
			b = append(b, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	if half {
		b = append(b, hi<<4)
	}
	return b
}

func (l *pdfLexer) skipDict() {
	depth := 1
	for l.pos+1 < len(l.src) && depth > 0 {
		switch {
		case l.src[l.pos] == '<' && l.src[l.pos+1] == '<':
			depth++
			l.pos += 2
		case l.src[l.pos] == '>' && l.src[l.pos+1] == '>':
			depth--
			l.pos += 2
		default:
			l.pos++
		}
	}
}

// skipInlineImage skips an inline image's dictionary and data, up to EI.
func (l *pdfLexer) skipInlineImage() {
	i := bytes.Index(l.src[l.pos:], []byte("ID"))
	if i < 0 {
		l.pos = len(l.src)
		return
	}
	l.pos += i + 2
	for l.pos+2 <= len(l.src) {
		j := bytes.Index(l.src[l.pos:], []byte("EI"))
		if j < 0 {
			l.pos = len(l.src)
			return
		}
		l.pos += j + 2
		if (l.pos-3 < 0 || isPDFSpace(l.src[l.pos-3])) && (l.pos >= len(l.src) || isPDFSpace(l.src[l.pos])) {
			return
		}
	}
}

// decodePDFString reads a string's bytes as text: UTF-16 when it starts with the
// byte order mark, else as the standard Latin encodings (WinAnsi and PDFDoc agree with
// Latin-1 on letters), which is what the standard fonts' simple encodings show.
func decodePDFString(b []byte) string {
	if len(b) >= 2 && b[0] == 0xFE && b[1] == 0xFF {
		u := make([]uint16, 0, len(b)/2)
		for i := 2; i+1 < len(b); i += 2 {
			u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
		}
		return string(utf16.Decode(u))
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = winAnsi(c)
	}
	return string(r)
}

// winAnsi maps the WinAnsi code points that differ from Latin-1 (0x80-0x9F).
func winAnsi(c byte) rune {
	if c < 0x80 || c > 0x9F {
		return rune(c)
	}
	table := [32]rune{'€', 0, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0, 'Ž', 0,
		0, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0, 'ž', 'Ÿ'}
	if r := table[c-0x80]; r != 0 {
		return r
	}
	return '\uFFFD'
}
