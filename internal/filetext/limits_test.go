package filetext

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"hearth/internal/pdftest"
)

// A PDF of a megabyte whose page unpacks to a GiB of spaces is refused as too large
// after unpacking at most the file's bound, not the GiB: the bytes counted and the
// memory allocated stay near the bound.
func TestReadPDFBomb(t *testing.T) {
	bomb := pdftest.Bomb(1024)
	t.Logf("bomb: %d bytes", len(bomb))
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	unpackedBefore := Unpacked()
	_, err := Read("bomb.pdf", "", bomb)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	lim := currentLimits().UnpackedBytes
	if n := Unpacked() - unpackedBefore; n > lim+1<<20 {
		t.Errorf("unpacked %d bytes, bound %d", n, lim)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(lim) {
		t.Errorf("allocated %d bytes reading it, more than the %d bytes it may unpack", alloc, lim)
	}
}

// Every stream is measured before the parser decodes any: a bomb that no page
// shows (the parser would decode it as an object stream, say) is refused too.
func TestReadPDFBombOffPage(t *testing.T) {
	z := pdftest.BombStream(128)
	pdf := pdftest.Build([]string{"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		pdftest.FlateStream([]byte("BT (hello) Tj ET")),
		fmt.Sprintf("<< /Length %d /Filter [/FlateDecode] >>\nstream\n%s\nendstream", len(z), z)})
	if _, err := Read("hidden.pdf", "", pdf); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

// A page tree that lists one page 200,000 times is too complex to read, and that
// is found without visiting the page again for each entry; one that lists it 10,000
// times is read as that page once.
func TestReadPDFRepeatedKids(t *testing.T) {
	if _, err := Read("kids.pdf", "", pdftest.RepeatedKids(200_000)); !errors.Is(err, ErrTooComplex) {
		t.Fatalf("200,000 kids: %v, want ErrTooComplex", err)
	}
	got, err := Read("kids.pdf", "", pdftest.RepeatedKids(10_000))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "One page, listed many times." {
		t.Errorf("text %q", got.Text)
	}
}

// Past the page bound, a PDF is too complex to read.
func TestReadPDFTooManyPages(t *testing.T) {
	defer SetLimits(SetLimits(Limits{PDFPages: 3}))
	if _, err := Read("a.pdf", "", pdftest.Pages("BT (1) Tj ET", "BT (2) Tj ET", "BT (3) Tj ET")); err != nil {
		t.Fatalf("three pages: %v", err)
	}
	_, err := Read("b.pdf", "", pdftest.Pages("BT (1) Tj ET", "BT (2) Tj ET", "BT (3) Tj ET", "BT (4) Tj ET"))
	if !errors.Is(err, ErrTooComplex) {
		t.Fatalf("err %v, want ErrTooComplex", err)
	}
}

// A read whose context ends (its client gone, its store deleted) stops and says so.
func TestReadPDFCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	gone := errors.New("client gone")
	cancel(gone)
	if _, err := ReadContext(ctx, "a.pdf", "", pdftest.RepeatedKids(10)); !errors.Is(err, gone) {
		t.Fatalf("err %v, want the context's cause", err)
	}
}

// A read past its time bound fails as too complex.
func TestReadPDFParseTime(t *testing.T) {
	defer SetLimits(SetLimits(Limits{ParseTime: time.Nanosecond}))
	if _, err := Read("a.pdf", "", pdftest.RepeatedKids(10)); !errors.Is(err, ErrTooComplex) {
		t.Fatalf("err %v, want ErrTooComplex", err)
	}
}

// The overall bound makes a read wait for the reads in flight: with room for one
// file, a second waits until the first ends (here: until its context ends).
func TestReadPDFOverallBound(t *testing.T) {
	defer SetLimits(SetLimits(Limits{UnpackedBytes: 1 << 20, UnpackedTotal: 1 << 20}))
	release, err := reserveUnpacking(context.Background(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := ReadContext(ctx, "a.pdf", "", pdftest.Pages("BT (hi) Tj ET"))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a read past the overall bound: %v, want it to wait until cancelled", err)
	}
	release()
	if _, err := Read("a.pdf", "", pdftest.Pages("BT (hi) Tj ET")); err != nil {
		t.Fatalf("after the room is free: %v", err)
	}
}

// Arrays nested a million deep in a content stream are read, not recursed into
// until the stack runs out (a fatal error no recover catches).
func TestReadPDFDeepArrays(t *testing.T) {
	content := "BT (deep) Tj ET " + strings.Repeat("[", 1<<20)
	got, err := Read("deep.pdf", "", pdftest.Pages(content))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "deep" {
		t.Errorf("text %q", got.Text)
	}
}

// TestMeasurePDF measures reading hostile PDFs by hand: HEARTH_MEASURE_PDF=bomb:1024
// or kids:200000 (go test -run TestMeasurePDF -v ./internal/filetext).
func TestMeasurePDF(t *testing.T) {
	spec := os.Getenv("HEARTH_MEASURE_PDF")
	if spec == "" {
		t.Skip("set HEARTH_MEASURE_PDF to measure")
	}
	kind, num, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(num)
	var pdf []byte
	if kind == "bomb" {
		pdf = pdftest.Bomb(n)
	} else {
		pdf = pdftest.RepeatedKids(n)
	}
	start := time.Now()
	_, err := Read("m.pdf", "", pdf)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t.Logf("%s: %d bytes, %v, err %v, total alloc %d MiB, heap sys %d MiB", spec, len(pdf), time.Since(start), err, m.TotalAlloc>>20, m.HeapSys>>20)
}

// Image streams (filters hearth does not decode) count nothing: a PDF of many
// images is not refused for their bytes.
func TestReadPDFImagesCountNothing(t *testing.T) {
	defer SetLimits(SetLimits(Limits{UnpackedBytes: 1 << 20}))
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		pdftest.FlateStream([]byte("BT (photos) Tj ET"))}
	img := strings.Repeat("\xff\xd8 jpeg bytes ", 20_000) // about 300 KB each
	for range 8 {
		objs = append(objs, fmt.Sprintf("<< /Type /XObject /Subtype /Image /Length %d /Filter /DCTDecode >>\nstream\n%s\nendstream", len(img), img))
	}
	got, err := Read("photos.pdf", "", pdftest.Build(objs))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "photos" {
		t.Errorf("text %q", got.Text)
	}
}

// A Flate stream whose dictionary pads its /Filter out of the scanner's reach is
// still measured (as Flate data).
func TestReadPDFBombFilterOutOfReach(t *testing.T) {
	z := pdftest.BombStream(128)
	pad := strings.Repeat("x", 8192)
	pdf := pdftest.Build([]string{"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		pdftest.FlateStream([]byte("BT (hello) Tj ET")),
		fmt.Sprintf("<< /Filter /FlateDecode /Pad (%s) /Length %d >>\nstream\n%s\nendstream", pad, len(z), z)})
	if _, err := Read("padded.pdf", "", pdf); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}
