package filetext

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hhrutter/lzw"
)

// Limits bound what reading one file may cost. A file past one of them is
// ErrTooLarge (it unpacks to too much) or ErrTooComplex (too many pages or objects,
// or too long to read): one file's error, never the process's memory or a worker
// held for ever.
type Limits struct {
	// UnpackedBytes bounds the bytes one PDF's streams unpack to: all its streams
	// together as the parser would decode them, and again its pages' content.
	UnpackedBytes int64
	// UnpackedTotal bounds UnpackedBytes summed over the PDFs read at once: a read
	// waits (under its context) until the files being read leave room for it.
	UnpackedTotal int64
	// PDFPages and PDFObjects bound a PDF's pages and the objects of its page tree.
	PDFPages, PDFObjects int
	// ParseTime bounds the time one PDF's reading takes.
	ParseTime time.Duration
}

// DefaultLimits are the bounds Read applies unless SetLimits changes them.
var DefaultLimits = Limits{
	UnpackedBytes: 64 << 20,
	UnpackedTotal: 256 << 20,
	PDFPages:      10_000,
	PDFObjects:    100_000,
	ParseTime:     60 * time.Second,
}

var (
	limitsMu sync.Mutex
	limits   = DefaultLimits
	// inFlight is the bytes reserved by the PDFs being read; free is signalled when a
	// read ends.
	inFlight int64
	free     = make(chan struct{})
	// unpacked counts every byte measured or decoded from a PDF's streams.
	unpacked atomic.Int64
)

// SetLimits replaces the limits (zero fields keep the defaults) and returns the ones
// before, to restore.
func SetLimits(l Limits) Limits {
	limitsMu.Lock()
	defer limitsMu.Unlock()
	old := limits
	if l.UnpackedBytes <= 0 {
		l.UnpackedBytes = DefaultLimits.UnpackedBytes
	}
	if l.UnpackedTotal <= 0 {
		l.UnpackedTotal = DefaultLimits.UnpackedTotal
	}
	if l.PDFPages <= 0 {
		l.PDFPages = DefaultLimits.PDFPages
	}
	if l.PDFObjects <= 0 {
		l.PDFObjects = DefaultLimits.PDFObjects
	}
	if l.ParseTime <= 0 {
		l.ParseTime = DefaultLimits.ParseTime
	}
	limits = l
	return old
}

func currentLimits() Limits {
	limitsMu.Lock()
	defer limitsMu.Unlock()
	return limits
}

// Unpacked is how many bytes reading PDFs has unpacked (measured or decoded) since
// the process started: what the bounds bound, for tests and diagnostics.
func Unpacked() int64 { return unpacked.Load() }

// The reasons of a file too costly to read; Read's errors wrap them.
var (
	ErrTooLarge   = errors.New("the file unpacks to more than hearth reads")
	ErrTooComplex = errors.New("the file is too complex to read")
)

var errParseTime = errors.New("filetext: parse time exceeded")

// reserveUnpacking waits until n bytes fit under the overall bound and takes them;
// release gives them back. n larger than the bound waits for an empty room.
func reserveUnpacking(ctx context.Context, n int64) (release func(), err error) {
	for {
		limitsMu.Lock()
		total := limits.UnpackedTotal
		if inFlight == 0 || inFlight+n <= total {
			inFlight += n
			limitsMu.Unlock()
			return func() {
				limitsMu.Lock()
				inFlight -= n
				close(free)
				free = make(chan struct{})
				limitsMu.Unlock()
			}, nil
		}
		wait := free
		limitsMu.Unlock()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-wait:
		}
	}
}

// streamStart finds a stream's data: the keyword after its dictionary, then its end
// of line.
var streamStart = regexp.MustCompile(`>>\s*stream\r?\n`)

// filterEntry reads a /Filter of names in a stream's dictionary: /F or [/F /G].
var filterEntry = regexp.MustCompile(`/Filter\s*(\[[^\]]*\]|/[A-Za-z0-9]+)`)
var filterName = regexp.MustCompile(`/([A-Za-z0-9]+)`)

// lengthEntry reads a stream's /Length: a number, or (group 2) a reference.
var lengthEntry = regexp.MustCompile(`/Length\s+(\d+)(\s+\d+\s+R)?`)

// scanStreams measures every stream of a PDF's bytes through its filters, before a
// parser decodes any (cross-reference and object streams are decoded while the file
// is read, whole): together they may unpack to at most limit bytes. A stream whose
// filters cannot be read from its dictionary (an indirect /Filter, a damaged one) is
// measured as Flate data, the usual case; one that does not decode (encrypted, or
// not compressed) counts what it decoded before failing.
func scanStreams(ctx context.Context, data []byte, limit int64) error {
	left := limit
	for _, loc := range streamStart.FindAllIndex(data, -1) {
		dictStart := max(0, loc[0]-4096)
		if i := bytes.LastIndex(data[dictStart:loc[0]], []byte(" obj")); i >= 0 {
			dictStart += i
		}
		dict := data[dictStart:loc[0]]
		// Without a /Filter of names in reach, the stream is measured as Flate data:
		// a dictionary padded past the window, or an indirect /Filter, must not hide
		// one; raw bytes fail the zlib header at once and count nothing.
		names := []string{"FlateDecode"}
		if m := filterEntry.FindSubmatch(dict); m != nil {
			names = names[:0]
			for _, n := range filterName.FindAllSubmatch(m[1], -1) {
				names = append(names, string(n[1]))
			}
		}
		raw := data[loc[1]:]
		if m := lengthEntry.FindSubmatch(dict); m != nil && len(m[2]) == 0 {
			if l, err := strconv.Atoi(string(m[1])); err == nil && l >= 0 && l < len(raw) {
				raw = raw[:l] // a direct /Length; an indirect one leaves the decoders to find the end
			}
		}
		n, err := unpackedSize(ctx, raw, names, left)
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// unpackedSize decodes raw through filters, streaming into a counter that fails past
// limit bytes, and returns the bytes decoded; a decoding error ends the count there
// (the parser reports damage). Filters hearth does not decode end the chain: images.
func unpackedSize(ctx context.Context, raw []byte, filters []string, limit int64) (int64, error) {
	if len(filters) == 0 {
		return 0, nil
	}
	var r io.Reader = bytes.NewReader(raw)
	for i, f := range filters {
		switch f {
		case "FlateDecode", "Fl":
			z, err := zlib.NewReader(r)
			if err != nil {
				return 0, nil
			}
			r = z
		case "LZWDecode", "LZW":
			r = lzw.NewReader(r, true)
		case "ASCIIHexDecode", "AHx":
			r = &hexReader{r: bufio.NewReader(r)}
		case "ASCII85Decode", "A85":
			r = ascii85.NewDecoder(&untilReader{r: bufio.NewReader(r), end: '~'})
		case "RunLengthDecode", "RL":
			r = &runLengthReader{r: bufio.NewReader(r)}
		default:
			if i == 0 {
				return 0, nil // an image's data, not unpacked by reading text
			}
			goto count
		}
	}
count:
	c := &counter{ctx: ctx, limit: limit}
	n, err := io.Copy(c, r)
	switch {
	case errors.Is(err, ErrTooLarge):
		return n, fmt.Errorf("%w: its streams unpack to more than %d bytes", ErrTooLarge, limit)
	case ctx.Err() != nil:
		return n, context.Cause(ctx)
	}
	return n, nil
}

// counter counts bytes written to it up to a limit, checking the context as it goes.
type counter struct {
	ctx   context.Context
	n     int64
	limit int64
}

func (c *counter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	unpacked.Add(int64(len(p)))
	c.n += int64(len(p))
	if c.n > c.limit {
		return 0, ErrTooLarge
	}
	return len(p), nil
}

// hexReader decodes ASCIIHexDecode data up to its '>'.
type hexReader struct {
	r    *bufio.Reader
	done bool
	hi   byte
	half bool
}

func (h *hexReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && !h.done {
		c, err := h.r.ReadByte()
		if err != nil || c == '>' {
			h.done = true
			break
		}
		v, ok := hexValue(c)
		if !ok {
			continue
		}
		if h.half {
			p[n] = h.hi<<4 | v
			n++
		} else {
			h.hi = v
		}
		h.half = !h.half
	}
	if h.done && h.half && n < len(p) {
		p[n] = h.hi << 4
		n++
		h.half = false
	}
	if n == 0 && h.done {
		return 0, io.EOF
	}
	return n, nil
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// untilReader reads up to (not including) the byte end: ASCII85Decode's "~>".
type untilReader struct {
	r    *bufio.Reader
	end  byte
	done bool
}

func (u *untilReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && !u.done {
		c, err := u.r.ReadByte()
		if err != nil || c == u.end {
			u.done = true
			break
		}
		p[n] = c
		n++
	}
	if n == 0 && u.done {
		return 0, io.EOF
	}
	return n, nil
}

// runLengthReader decodes RunLengthDecode data up to its end-of-data byte 128.
type runLengthReader struct {
	r       *bufio.Reader
	pending []byte
	run     byte
	repeat  int
	done    bool
}

func (rl *runLengthReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case rl.repeat > 0:
			p[n] = rl.run
			n++
			rl.repeat--
		case len(rl.pending) > 0:
			k := copy(p[n:], rl.pending)
			n += k
			rl.pending = rl.pending[k:]
		case rl.done:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		default:
			l, err := rl.r.ReadByte()
			if err != nil || l == 128 {
				rl.done = true
				continue
			}
			if l < 128 {
				buf := make([]byte, int(l)+1)
				k, _ := io.ReadFull(rl.r, buf)
				rl.pending = buf[:k]
				if k < len(buf) {
					rl.done = true
				}
				continue
			}
			b, err := rl.r.ReadByte()
			if err != nil {
				rl.done = true
				continue
			}
			rl.run, rl.repeat = b, 257-int(l)
		}
	}
	return n, nil
}

// HoldUnpacking takes n bytes of the overall bound, as a PDF being read does, until
// release is called: PDFs read meanwhile wait for room. Tests use it to hold a read
// in progress.
func HoldUnpacking(ctx context.Context, n int64) (release func(), err error) {
	return reserveUnpacking(ctx, n)
}
