package filetext

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"hearth/internal/pdftest"
)

// buildPDF writes a real PDF: one page per content stream, Helvetica, each stream
// Flate-compressed as most writers do, with a correct cross-reference table.
func buildPDF(pages ...string) []byte { return pdftest.Pages(pages...) }

func pngImage() []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 2)))
	return b.Bytes()
}

func TestRead(t *testing.T) {
	page1 := "BT /F1 12 Tf 72 720 Td (The kettle ships on Tuesday.) Tj 0 -14 Td [(Price: ) -250 (\\24342 \\(net\\))] TJ ET"
	page2 := "BT /F1 12 Tf 72 720 Td <48656c6c6f> Tj T* (second line) Tj ET"
	for _, tc := range []struct {
		name, file, mime string
		data             []byte
		kind             Kind
		text, source     string
		err              error
	}{
		{name: "markdown", file: "notes.md", data: []byte("# Notes\n\nhello\n"), text: "# Notes\n\nhello\n", source: "text"},
		{name: "go source", file: "main.go", data: []byte("package main\n"), text: "package main\n", source: "text"},
		{name: "csv", file: "data.csv", data: []byte("a,b\n1,2\n"), text: "a,b\n1,2\n", source: "text"},
		{name: "json without a name", data: []byte(`{"a":1}`), text: `{"a":1}`, source: "text"},
		{name: "utf-8 bom", file: "a.txt", data: []byte("\xEF\xBB\xBFhé"), text: "hé", source: "text"},
		{name: "utf-16le", file: "a.txt", data: []byte{0xFF, 0xFE, 'h', 0, 'i', 0}, text: "hi", source: "text"},
		{name: "html", file: "page.html", data: []byte(`<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><p>One <b>bold</b> word.</p><script>alert(1)</script><p>Two</p></body></html>`),
			text: "Title\nOne bold word.\nTwo", source: "html"},
		{name: "pdf", file: "report.pdf", data: buildPDF(page1, page2),
			text: "The kettle ships on Tuesday.\nPrice: £42 (net)\n\nHello\nsecond line", source: "pdf"},
		{name: "pdf without its extension", file: "report", data: buildPDF("BT (x y) Tj ET"), text: "x y", source: "pdf"},
		{name: "png", file: "chart.png", data: pngImage(), kind: Image},
		{name: "zero bytes", file: "empty.txt", data: nil, err: ErrEmpty},
		{name: "binary posing as text", file: "notes.txt", data: []byte("ab\x00\x01\x02cd"), err: ErrBinary},
		{name: "latin-1 posing as utf-8", file: "notes.md", data: []byte("caf\xe9"), err: ErrBinary},
		{name: "zip", file: "doc.docx", data: []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00rest"), err: ErrUnsupported},
		{name: "corrupt pdf", file: "bad.pdf", data: []byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog"), err: ErrCorrupt},
		{name: "truncated pdf", file: "cut.pdf", data: buildPDF(page1)[:300], err: ErrCorrupt},
		{name: "pdf without text", file: "scan.pdf", data: buildPDF("0 0 m 100 100 l S"), err: ErrNoText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(tc.file, tc.mime, tc.data)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tc.kind || got.Text != tc.text || (tc.source != "" && got.Source != tc.source) {
				t.Errorf("got %+v, want kind %d text %q", got, tc.kind, tc.text)
			}
			if tc.kind == Image && got.MIME != "image/png" {
				t.Errorf("mime %q", got.MIME)
			}
		})
	}
}

// A large text-only PDF reads in bounded time, and its words come back in order.
func TestReadLongPDF(t *testing.T) {
	var pages []string
	for p := 0; p < 20; p++ {
		var b strings.Builder
		b.WriteString("BT /F1 10 Tf 72 760 Td ")
		for l := 0; l < 50; l++ {
			fmt.Fprintf(&b, "(page %d line %d) Tj 0 -12 Td ", p, l)
		}
		b.WriteString("ET")
		pages = append(pages, b.String())
	}
	got, err := Read("long.pdf", "", buildPDF(pages...))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Text, "page 0 line 0\npage 0 line 1\n") || !strings.HasSuffix(got.Text, "page 19 line 49") {
		t.Errorf("text %q…%q", got.Text[:40], got.Text[len(got.Text)-40:])
	}
}
