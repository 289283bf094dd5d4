// Package filetext turns a file a client hands a model (an upload, an input_file part)
// into what a local model can read: the text of a text-like file or of a PDF, or an
// image the runtime takes as one. A file it cannot read is a classified error that
// says why, in words a client can act on, so that one bad file is a clear 400 and
// nothing else.
package filetext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is what a file became.
type Kind int

const (
	Text  Kind = iota // a text-like file or a PDF's text: Result.Text
	Image             // an image the model sees as one: Result.MIME and the bytes as given
)

// Result is a file as the model will see it.
type Result struct {
	Kind Kind
	// Text is the file's text (Kind Text): UTF-8, without a byte order mark.
	Text string
	// MIME is the image's media type (Kind Image), e.g. image/png.
	MIME string
	// Source says what the text came from, for logs and messages: "text", "html",
	// "pdf".
	Source string
	// Pages is a PDF's number of pages; 0 for other files.
	Pages int
}

// The reasons a file cannot be read. Every error of Read wraps one of them.
var (
	ErrEmpty       = errors.New("the file is empty")
	ErrBinary      = errors.New("the file is not text")
	ErrUnsupported = errors.New("this type of file cannot be read by the model")
	ErrCorrupt     = errors.New("the file is damaged")
	ErrNoText      = errors.New("the file has no text a model can read")
)

// textExtensions are the names of text-like files: prose, data and source code. A
// file of another or no extension is still read as text when its bytes are text.
var textExtensions = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`txt text md markdown rst adoc org csv tsv json jsonl ndjson yaml yml toml xml ini cfg conf
		env log tex bib diff patch srt vtt
		go py pyi js mjs cjs ts tsx jsx java kt kts scala c h cc cpp cxx hpp hh cs fs rs rb php pl pm sh bash zsh fish ps1
		sql css scss sass less vue svelte swift m mm r jl lua dart ex exs erl hrl clj hs ml mli nim zig v sv vhd proto
		graphql gql tf hcl nix dockerfile makefile cmake gradle bat properties`) {
		textExtensions[e] = true
	}
}

var htmlExtensions = map[string]bool{"html": true, "htm": true, "xhtml": true}

// Read turns a file's bytes into what the model sees. name is the file's name (its
// extension helps classify it; it may be empty), declared its declared media type ("" when
// none was given: a data URL's, say).
func Read(name, declared string, data []byte) (Result, error) {
	return ReadContext(context.Background(), name, declared, data)
}

// ReadContext is Read that gives up when ctx ends (a client gone, a store deleted),
// returning context.Cause(ctx), and within the bounds of the current Limits.
func ReadContext(ctx context.Context, name, declared string, data []byte) (Result, error) {
	if len(data) == 0 {
		return Result{}, ErrEmpty
	}
	ext := extension(name)
	declared, _, _ = mime.ParseMediaType(declared)
	sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	switch {
	case bytes.HasPrefix(data, []byte("%PDF-")) || ext == "pdf" || declared == "application/pdf":
		return readPDF(ctx, data)
	case strings.HasPrefix(sniffed, "image/") && imageTypes[sniffed]:
		return Result{Kind: Image, MIME: sniffed, Source: "image"}, nil
	case strings.HasPrefix(sniffed, "image/") || strings.HasPrefix(sniffed, "audio/") || strings.HasPrefix(sniffed, "video/") ||
		sniffed == "application/zip" || sniffed == "application/x-gzip" || sniffed == "application/wasm" ||
		sniffed == "application/vnd.ms-fontobject" || strings.HasPrefix(sniffed, "font/"):
		return Result{}, fmt.Errorf("%w: it is %s (send text, Markdown, source code, JSON, CSV, HTML, PDF, or a PNG, JPEG, GIF or WebP image)", ErrUnsupported, sniffed)
	}
	text, err := decodeText(data)
	if err != nil {
		if textExtensions[ext] || htmlExtensions[ext] || strings.HasPrefix(declared, "text/") {
			return Result{}, fmt.Errorf("%w: %s says it is .%s text, but its bytes are %v", ErrBinary, nameOr(name), ext, err)
		}
		return Result{}, fmt.Errorf("%w: %v", ErrBinary, err)
	}
	if htmlExtensions[ext] || declared == "text/html" || (ext == "" && sniffed == "text/html") {
		return Result{Kind: Text, Text: htmlText(text), Source: "html"}, nil
	}
	return Result{Kind: Text, Text: text, Source: "text"}, nil
}

// imageTypes are the image types the runtime's vision models decode.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func extension(name string) string {
	base := strings.ToLower(path.Base(strings.ReplaceAll(name, `\`, "/")))
	if base == "dockerfile" || base == "makefile" {
		return base
	}
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		return base[i+1:]
	}
	return ""
}

func nameOr(name string) string {
	if name == "" {
		return "the file"
	}
	return "'" + name + "'"
}

// decodeText reads UTF-8 (a byte order mark dropped) or UTF-16 with its byte order
// mark. Bytes that are neither, a NUL, or many control characters mean the file is not
// text whatever its name says.
func decodeText(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		if len(data)%2 != 0 {
			return "", errors.New("UTF-16 of an odd length")
		}
		big := data[0] == 0xFE
		u := make([]uint16, 0, len(data)/2-1)
		for i := 2; i+1 < len(data); i += 2 {
			if big {
				u = append(u, uint16(data[i])<<8|uint16(data[i+1]))
			} else {
				u = append(u, uint16(data[i+1])<<8|uint16(data[i]))
			}
		}
		data = []byte(string(utf16.Decode(u)))
	}
	if !utf8.Valid(data) {
		return "", errors.New("not UTF-8")
	}
	control := 0
	for _, b := range data {
		switch {
		case b == 0:
			return "", errors.New("binary (it holds NUL bytes)")
		case b < 0x20 && b != '\n' && b != '\r' && b != '\t' && b != '\f' && b != 0x1b:
			control++
		}
	}
	if control > len(data)/100+8 {
		return "", fmt.Errorf("binary (%d control characters)", control)
	}
	return string(data), nil
}
