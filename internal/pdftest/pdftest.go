// Package pdftest builds PDFs for tests, hostile ones included, in memory: a real
// cross-reference table, Flate data written by compress/flate. Nothing here is
// checked in as a binary; each file is made by the test that reads it.
package pdftest

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"strings"
)

// Build writes objs as objects 1..n of a PDF whose catalog is object 1, with its
// cross-reference table and trailer.
func Build(objs []string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// FlateStream is a stream object of data, Flate-compressed.
func FlateStream(data []byte) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(data)
	w.Close()
	return fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String())
}

const font = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"

// Pages is a PDF of one page per content stream, each Flate-compressed.
func Pages(contents ...string) []byte {
	kids := ""
	for i := range contents {
		kids += fmt.Sprintf("%d 0 R ", 4+2*i)
	}
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, len(contents)), font}
	for i, c := range contents {
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			FlateStream([]byte(c)))
	}
	return Build(objs)
}

// RepeatedKids is a PDF whose page tree lists its one page n times.
func RepeatedKids(n int) []byte {
	kids := strings.Repeat("4 0 R ", n)
	return Build([]string{"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, n), font,
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		FlateStream([]byte("BT /F1 12 Tf 72 720 Td (One page, listed many times.) Tj ET"))})
}

// Bomb is a one-page PDF whose content stream is "BT /F1 12 Tf (Bomb) Tj ", then
// mib MiB of spaces, then " ET", Flate-compressed: about a thousandth of its unpacked
// size. mib is at least 3.
func Bomb(mib int) []byte {
	z := BombStream(mib)
	return Build([]string{"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>", font,
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(z), z)})
}

// BombStream is the zlib data of Bomb's content. Compressing a GiB takes seconds,
// so one MiB of spaces is compressed and flushed until its block repeats (the window
// then holds only spaces), and that block is repeated: the stream is what
// compress/zlib would write with those flushes, checksum included.
func BombStream(mib int) []byte {
	if mib < 3 {
		mib = 3
	}
	prefix, suffix := []byte("BT /F1 12 Tf (Bomb) Tj "), []byte(" ET")
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(prefix)
	w.Write(chunk)
	w.Flush()
	first := bytes.Clone(buf.Bytes())
	buf.Reset()
	w.Write(chunk)
	w.Flush()
	steady := bytes.Clone(buf.Bytes())
	buf.Reset()
	w.Write(chunk)
	w.Flush()
	if !bytes.Equal(buf.Bytes(), steady) {
		panic("pdftest: the compressed block of spaces does not repeat")
	}
	buf.Reset()
	w.Write(suffix)
	w.Close()
	tail := bytes.Clone(buf.Bytes())

	out := []byte{0x78, 0xDA}
	out = append(out, first...)
	for i := 1; i < mib; i++ {
		out = append(out, steady...)
	}
	out = append(out, tail...)
	a, b := adler(1, 0, prefix)
	a, b = adlerRun(a, b, ' ', uint64(mib)<<20)
	a, b = adler(a, b, suffix)
	sum := b<<16 | a
	return append(out, byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum))
}

const adlerMod = 65521

func adler(a, b uint64, p []byte) (uint64, uint64) {
	for _, c := range p {
		a = (a + uint64(c)) % adlerMod
		b = (b + a) % adlerMod
	}
	return a, b
}

// adlerRun advances an Adler-32 over n bytes of c: a grows by n·c, b by n·a and by
// c·n(n+1)/2.
func adlerRun(a, b uint64, c byte, n uint64) (uint64, uint64) {
	var tri uint64 // n(n+1)/2 mod adlerMod
	if n%2 == 0 {
		tri = (n / 2 % adlerMod) * ((n + 1) % adlerMod) % adlerMod
	} else {
		tri = (n % adlerMod) * ((n + 1) / 2 % adlerMod) % adlerMod
	}
	b = (b + (n%adlerMod)*a + uint64(c)*tri) % adlerMod
	a = (a + (n%adlerMod)*uint64(c)) % adlerMod
	return a, b
}
