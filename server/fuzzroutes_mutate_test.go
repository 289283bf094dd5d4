package server_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"mime/multipart"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file is the route fuzzer's mutator and its generated inputs: a deterministic
// (seeded math/rand) JSON-aware and byte-level mutator over valid bodies, the special
// sets (long runs, long words, big inputs, hostile PDFs) described by short names so the
// committed corpus stays small, and the corpus's file format.

// fuzzCase is one request of the route fuzzer, as the corpus stores it. Path and body
// may hold placeholders (@resp@, @conv@, @item@, @file@, @vs@, @batch@) that stand for
// the ids of objects the run made, so a case means the same thing in every run.
type fuzzCase struct {
	Route  string `json:"route"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Body is the request body, or BodyB64 when it is not valid UTF-8.
	Body    string `json:"body,omitempty"`
	BodyB64 string `json:"body_b64,omitempty"`
	// ContentType is the body's media type; empty means application/json.
	ContentType string `json:"content_type,omitempty"`
	// WS sends Body as one text frame of a WebSocket connection to /v1/responses.
	WS bool `json:"ws,omitempty"`
	// Gen names a generated case (special sets: long runs, long words, big bodies,
	// hostile PDFs), expanded by expandGen; Route, Method, Path and Body are then
	// filled in by it.
	Gen string `json:"gen,omitempty"`
	// Found names the fault a case found when it was recorded (each since fixed): a
	// case that fails again is reported under that name.
	Found string `json:"found,omitempty"`

	body   []byte // the bytes to send, after expansion
	attach bool   // an upload to attach to the run's vector store, then search
}

func (c fuzzCase) label() string {
	if c.Gen != "" {
		return c.Gen
	}
	kind := "json"
	switch {
	case c.WS:
		kind = "ws"
	case strings.HasPrefix(c.ContentType, "multipart/"):
		kind = "multipart"
	case len(c.body) == 0:
		kind = "nobody"
	}
	return kind
}

// bytesOf returns the case's body bytes.
func (c *fuzzCase) bytesOf() []byte {
	if c.body != nil {
		return c.body
	}
	if c.BodyB64 != "" {
		b, _ := base64.StdEncoding.DecodeString(c.BodyB64)
		return b
	}
	return []byte(c.Body)
}

// setBody stores b in the case, as text when it can be.
func (c *fuzzCase) setBody(b []byte) {
	c.body = b
	c.Body, c.BodyB64 = "", ""
	if utf8.Valid(b) {
		c.Body = string(b)
	} else {
		c.BodyB64 = base64.StdEncoding.EncodeToString(b)
	}
}

// jnode is a JSON value whose objects keep their keys' order and duplicates, so that a
// mutation can duplicate a key or keep the order a schema-sensitive parser sees.
type jnode struct {
	kind byte // 'o' object, 'a' array, 'l' literal (raw JSON text)
	keys []string
	vals []*jnode
	raw  string
}

func parseJSON(b []byte) (*jnode, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	n, err := parseNode(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return n, nil
}

func parseNode(d *json.Decoder) (*jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := &jnode{kind: 'o'}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				child, err := parseNode(d)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
				n.vals = append(n.vals, child)
			}
			_, err := d.Token()
			return n, err
		case '[':
			n := &jnode{kind: 'a'}
			for d.More() {
				child, err := parseNode(d)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, child)
			}
			_, err := d.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", v)
	case string:
		b, _ := json.Marshal(v)
		return &jnode{kind: 'l', raw: string(b)}, nil
	case json.Number:
		return &jnode{kind: 'l', raw: v.String()}, nil
	case bool:
		return &jnode{kind: 'l', raw: strconv.FormatBool(v)}, nil
	case nil:
		return &jnode{kind: 'l', raw: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func (n *jnode) write(w *bytes.Buffer) {
	switch n.kind {
	case 'o':
		w.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				w.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			w.Write(kb)
			w.WriteByte(':')
			n.vals[i].write(w)
		}
		w.WriteByte('}')
	case 'a':
		w.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				w.WriteByte(',')
			}
			v.write(w)
		}
		w.WriteByte(']')
	default:
		w.WriteString(n.raw)
	}
}

func (n *jnode) bytes() []byte {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *jnode) clone() *jnode {
	c := &jnode{kind: n.kind, raw: n.raw, keys: append([]string(nil), n.keys...)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	return c
}

// containers lists every object and array of the tree, the root first.
func (n *jnode) containers(out []*jnode) []*jnode {
	if n.kind == 'l' {
		return out
	}
	out = append(out, n)
	for _, v := range n.vals {
		out = v.containers(out)
	}
	return out
}

func lit(v any) *jnode {
	b, _ := json.Marshal(v)
	return &jnode{kind: 'l', raw: string(b)}
}

func rawLit(s string) *jnode { return &jnode{kind: 'l', raw: s} }

// placeholders stand for the ids of the run's objects; fuzzIDs adds ids of no object
// and of the wrong kind.
var placeholders = []string{"@resp@", "@conv@", "@item@", "@file@", "@vs@", "@batch@"}

var fuzzIDs = []string{"resp_00000000000000000000000000", "conv_x", "msg_0", "file-0", "vs_0", "vsfb_0",
	"", "../../etc/passwd", "%2e%2e", "resp_" + strings.Repeat("9", 300), "\u0000", "caller_1"}

// mutator mutates bodies deterministically from its seed.
type mutator struct{ r *rand.Rand }

func newMutator(seed int64) *mutator { return &mutator{r: rand.New(rand.NewSource(seed))} }

func (m *mutator) pick(list []string) string { return list[m.r.Intn(len(list))] }

// oddValue is a value of a random type, often one no field expects.
func (m *mutator) oddValue() *jnode {
	switch m.r.Intn(22) {
	case 0:
		return rawLit("null")
	case 1:
		return rawLit("true")
	case 2:
		return rawLit("0")
	case 3:
		return rawLit("-1")
	case 4:
		return rawLit("1e308")
	case 5:
		return rawLit("18446744073709551616")
	case 6:
		return rawLit("-9223372036854775809")
	case 7:
		return rawLit("0.5")
	case 8:
		return lit("")
	case 9:
		return lit(m.pick([]string{"x", "auto", "none", "required", "low", "high", "text", "message", "user", "assistant", "system", "developer"}))
	case 10:
		return rawLit("[]")
	case 11:
		return rawLit("{}")
	case 12:
		return lit(strings.Repeat(m.pick([]string{"a", "\"", "{", "<", "|", "~", "#", "%", "\\", "漢", "😀", " "}), 1+m.r.Intn(3000)))
	case 13:
		depth := 1 + m.r.Intn(60)
		return rawLit(strings.Repeat("[", depth) + strings.Repeat("]", depth))
	case 14:
		depth := 1 + m.r.Intn(40)
		return rawLit(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	case 15:
		return lit(m.pick([]string{"\u0000", "\xed\xa0\x80", "\u202e\u0041", "\uFEFF", "e\u0301", "\U0001F600\U0001F3FD", "\x7f", "ÿ", "\u2028"}))
	case 16:
		return rawLit(`"\ud800\udfff\u0000"`)
	case 17, 18:
		return lit(m.pick(placeholders))
	case 19:
		return lit(m.pick(fuzzIDs))
	case 20:
		return rawLit(`{"type":"` + m.pick([]string{"message", "function_call", "function_call_output", "reasoning", "compaction", "item_reference", "input_text", "input_file", "input_image", "file_search_call", "mcp_call", "custom_tool_call", "unknown"}) + `"}`)
	default:
		return rawLit(strconv.FormatInt(m.r.Int63()-m.r.Int63(), 10))
	}
}

var fuzzKeys = []string{"model", "input", "instructions", "stream", "store", "background", "tools", "tool_choice",
	"previous_response_id", "conversation", "metadata", "max_output_tokens", "temperature", "top_p", "text",
	"reasoning", "include", "truncation", "items", "query", "max_num_results", "filters", "file_id", "file_ids",
	"attributes", "name", "chunking_strategy", "expires_after", "encoding_format", "dimensions", "type", "role",
	"content", "id", "call_id", "arguments", "output", "parallel_tool_calls", "max_tool_calls", "prompt_cache_key",
	"hearth", "user", "service_tier", "top_logprobs", "after", "limit", "order", "ranking_options", "rewrite_query"}

// mutateJSON applies one to three JSON-aware changes to tree.
func (m *mutator) mutateJSON(tree *jnode) {
	for range 1 + m.r.Intn(3) {
		cs := tree.containers(nil)
		c := cs[m.r.Intn(len(cs))]
		switch m.r.Intn(9) {
		case 0: // drop a field or element
			if len(c.vals) > 0 {
				i := m.r.Intn(len(c.vals))
				c.vals = append(c.vals[:i], c.vals[i+1:]...)
				if c.kind == 'o' {
					c.keys = append(c.keys[:i], c.keys[i+1:]...)
				}
			}
		case 1: // duplicate a field (same key twice) or an element
			if len(c.vals) > 0 {
				i := m.r.Intn(len(c.vals))
				v := c.vals[i].clone()
				if m.r.Intn(2) == 0 {
					v = m.oddValue()
				}
				c.vals = append(c.vals, v)
				if c.kind == 'o' {
					c.keys = append(c.keys, c.keys[i])
				}
			}
		case 2, 3, 4: // a value of the wrong type, a huge number, an id of another object
			if len(c.vals) > 0 {
				c.vals[m.r.Intn(len(c.vals))] = m.oddValue()
			}
		case 5: // a field no route knows, or one of another route
			v := m.oddValue()
			if c.kind == 'o' {
				k := m.pick(fuzzKeys)
				if m.r.Intn(4) == 0 {
					k = m.pick([]string{"", "\u0000", "__proto__", "x-unknown", strings.Repeat("k", 500)})
				}
				c.keys = append(c.keys, k)
			}
			c.vals = append(c.vals, v)
		case 6: // repeat an array's element, within limits
			if c.kind == 'a' && len(c.vals) > 0 {
				v := c.vals[m.r.Intn(len(c.vals))]
				for range 1 + m.r.Intn(200) {
					c.vals = append(c.vals, v.clone())
				}
			}
		case 7: // wrap a value in an array or object
			if len(c.vals) > 0 {
				i := m.r.Intn(len(c.vals))
				if m.r.Intn(2) == 0 {
					c.vals[i] = &jnode{kind: 'a', vals: []*jnode{c.vals[i]}}
				} else {
					c.vals[i] = &jnode{kind: 'o', keys: []string{m.pick(fuzzKeys)}, vals: []*jnode{c.vals[i]}}
				}
			}
		case 8: // edit a string: unicode, empty, truncated, a placeholder spliced in
			for i, v := range c.vals {
				if v.kind == 'l' && strings.HasPrefix(v.raw, `"`) && m.r.Intn(2) == 0 {
					var s string
					json.Unmarshal([]byte(v.raw), &s)
					switch m.r.Intn(4) {
					case 0:
						s = ""
					case 1:
						s += m.pick([]string{"\u0000", "\xed\xa0\x80", "😀", "漢字", "\u202e", "\r\n", "<|end|>", "<|im_end|>", "</s>", "{{", "{%"})
					case 2:
						if len(s) > 1 {
							s = s[:m.r.Intn(len(s))]
						}
					default:
						s = m.pick(placeholders) + s
					}
					c.vals[i] = lit(s)
					break
				}
			}
		}
	}
}

// mutateBytes applies one to three byte-level changes.
func (m *mutator) mutateBytes(b []byte) []byte {
	b = append([]byte(nil), b...)
	for range 1 + m.r.Intn(3) {
		if len(b) == 0 {
			b = append(b, byte(m.r.Intn(256)))
			continue
		}
		i := m.r.Intn(len(b))
		switch m.r.Intn(7) {
		case 0:
			b[i] = byte(m.r.Intn(256))
		case 1:
			b[i] ^= 1 << m.r.Intn(8)
		case 2:
			b = b[:i]
		case 3:
			j := i + m.r.Intn(min(len(b)-i, 64)+1)
			b = append(b[:i:i], b[j:]...)
		case 4:
			ins := []byte(m.pick([]string{"\x00", "\xff", "\"", "{", "}", "[", "]", ",", ":", "\\", "\\u", "null", "\r\n", "\xed\xa0\x80", "9999999999999999999999"}))
			b = append(b[:i:i], append(ins, b[i:]...)...)
		case 5:
			j := i + m.r.Intn(min(len(b)-i, 64)+1)
			b = append(b[:j:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
		default:
			b = append(b, b[:i]...)
		}
	}
	return b
}

// mutate returns a mutated copy of seed: JSON-aware mostly, byte-level sometimes, and a
// mutated multipart body for file uploads.
func (m *mutator) mutate(seed fuzzCase) fuzzCase {
	c := seed
	c.Found, c.Gen = "", ""
	body := seed.bytesOf()
	switch {
	case strings.HasPrefix(seed.ContentType, "multipart/"):
		b, ct := m.mutateUpload()
		c.ContentType = ct
		if m.r.Intn(4) == 0 {
			b = m.mutateBytes(b)
		}
		c.setBody(b)
	case len(body) == 0:
		c.Path = m.mutatePath(seed.Path)
		c.setBody(nil)
	default:
		if m.r.Intn(8) == 0 {
			c.Path = m.mutatePath(seed.Path)
		}
		tree, err := parseJSON(body)
		if err != nil || m.r.Intn(5) == 0 {
			c.setBody(m.mutateBytes(body))
		} else {
			m.mutateJSON(tree)
			c.setBody(tree.bytes())
		}
	}
	return c
}

// mutatePath swaps an id of the path for another object's, a made-up or hostile one,
// or adds query parameters.
func (m *mutator) mutatePath(p string) string {
	parts := strings.Split(p, "/")
	switch m.r.Intn(3) {
	case 0:
		for i, s := range parts {
			if strings.HasPrefix(s, "@") || strings.Contains(s, "_") && i > 2 {
				parts[i] = m.pick(append(append([]string(nil), placeholders...), "resp_x", "x", strings.Repeat("a", 2000), "%00", "%ff%fe", "..", "%2F"))
				break
			}
		}
		return strings.Join(parts, "/")
	default:
		q := m.pick([]string{"limit=", "after=", "order=", "before=", "include[]=", "purpose=", "filter="})
		v := m.pick([]string{"0", "-1", "1000000", "99999999999999999999", "asc", "desc", "x", "@item@", "@file@", "%00", "in_progress"})
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		return p + sep + q + v
	}
}

// mutateUpload builds a multipart upload with mutated fields and content.
func (m *mutator) mutateUpload() ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	purposes := []string{"assistants", "user_data", "batch", "vision", "fine-tune", "", "x", "assistants\x00", strings.Repeat("p", 300)}
	names := []string{"notes.md", "a.pdf", "a.txt", "", "../../etc/passwd", "a\x00b.md", strings.Repeat("n", 2000) + ".md", "漢字.txt", "x.json", "noext"}
	contents := [][]byte{[]byte("# Notes\n\nhello world\n"), []byte("%PDF-1.4\n%%EOF"), nil, []byte{0, 1, 2, 0xff},
		[]byte(strings.Repeat("word ", 200)), []byte("{\"a\":1}"), []byte(strings.Repeat("\"", 2000))}
	parts := m.r.Intn(4)
	if m.r.Intn(3) > 0 {
		parts = 2
	}
	for i := range parts {
		if i%2 == 0 && m.r.Intn(4) > 0 {
			w, _ := mw.CreateFormField(m.pick([]string{"purpose", "purpose", "file", "expires_after[anchor]", "x"}))
			w.Write([]byte(m.pick(purposes)))
			continue
		}
		field := m.pick([]string{"file", "file", "file", "purpose", "files"})
		w, _ := mw.CreateFormFile(field, m.pick(names))
		content := contents[m.r.Intn(len(contents))]
		if m.r.Intn(3) == 0 {
			content = m.mutateBytes(content)
		}
		w.Write(content)
	}
	mw.Close()
	ct := mw.FormDataContentType()
	if m.r.Intn(10) == 0 {
		ct = m.pick([]string{"multipart/form-data", "multipart/form-data; boundary=", "application/json", "text/plain"})
	}
	return b.Bytes(), ct
}

// multipartBody is an upload of content as filename with purpose.
func multipartBody(purpose, filename string, content []byte) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, _ := mw.CreateFormField("purpose")
	w.Write([]byte(purpose))
	w, _ = mw.CreateFormFile("file", filename)
	w.Write(content)
	mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

// Hostile PDFs, made here so none is stored: each is small on the wire and costly or
// endless to a parser that trusts it.

// pdfWrite assembles a PDF from its objects' bodies (object i+1 is objs[i]) with a
// correct xref table, unless xref is given (written in its place).
func pdfWrite(objs []string, xref string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	start := b.Len()
	if xref != "" {
		b.WriteString(xref)
	} else {
		fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
		for _, off := range offsets {
			fmt.Fprintf(&b, "%010d 00000 n \n", off)
		}
		fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\n", len(objs)+1)
	}
	fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", start)
	return b.Bytes()
}

var (
	bombOnce sync.Once
	bombPDF  []byte
)

// pdfBomb is a one-page PDF whose FlateDecode content stream inflates to a 128 MiB
// string shown as text: streamed through the compressor, so the test holds only the
// ~130 kB it compresses to.
func pdfBomb() []byte {
	bombOnce.Do(func() {
		var z bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
		zw.Write([]byte("BT /F1 12 Tf 72 712 Td ("))
		chunk := bytes.Repeat([]byte("A"), 64<<10)
		for n := 0; n < 128<<20; n += len(chunk) {
			zw.Write(chunk)
		}
		zw.Write([]byte(") Tj ET\n"))
		zw.Close()
		bombPDF = pdfWrite([]string{
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
			fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.Bytes()),
			"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		}, "")
	})
	return bombPDF
}

// pdfKids is a page tree whose one /Kids array lists the same page n times.
func pdfKids(n int) []byte {
	kids := strings.Repeat("3 0 R ", n)
	return pdfWrite([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, n),
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		"<< /Length 35 >>\nstream\nBT /F1 12 Tf 72 712 Td (hi) Tj ET\nendstream",
	}, "")
}

// pdfLoop is a page tree that lists itself among its kids.
func pdfLoop() []byte {
	return pdfWrite([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
		"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 3 0 R] /Count 2 >>",
	}, "")
}

// pdfBadXref has an xref table whose offsets and counts point anywhere.
func pdfBadXref() []byte {
	return pdfWrite([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R >>",
	}, "xref\n0 2147483647\n0000000000 65535 f \n9999999999 00000 n \n-000000001 00000 n \ntrailer\n<< /Size 2147483647 /Root 99 0 R /Prev 4 >>\n")
}

// pdfNested has an object nested depth levels deep (arrays and dictionaries).
func pdfNested(depth int) []byte {
	deep := strings.Repeat("[<< /A ", depth) + "1" + strings.Repeat(" >>]", depth)
	return pdfWrite([]string{
		"<< /Type /Catalog /Pages 2 0 R /Deep 4 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Resources 4 0 R >>",
		deep,
	}, "")
}

// hostilePDFs names the hostile PDFs of the special sets.
var hostilePDFs = map[string]func() []byte{
	"bomb":    pdfBomb,
	"kids50k": func() []byte { return pdfKids(50000) },
	"loop":    pdfLoop,
	"badxref": pdfBadXref,
	"nested":  func() []byte { return pdfNested(20000) },
}

func hostilePDFNames() []string {
	var names []string
	for n := range hostilePDFs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
