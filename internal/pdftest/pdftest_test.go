package pdftest

import (
	"bytes"
	"compress/zlib"
	"io"
	"testing"
)

// BombStream is a valid zlib stream of exactly the content it claims, checksum
// included.
func TestBombStream(t *testing.T) {
	z, err := zlib.NewReader(bytes.NewReader(BombStream(5)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte("BT /F1 12 Tf (Bomb) Tj "), bytes.Repeat([]byte(" "), 5<<20)...), " ET"...)
	if !bytes.Equal(got, want) {
		t.Fatalf("unpacked %d bytes, want %d", len(got), len(want))
	}
}
