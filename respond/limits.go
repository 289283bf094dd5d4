package respond

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/internal/textcap"
)

// Limits bound what one request may ask for. A zero field takes its default; a
// negative one turns the limit off.
type Limits struct {
	// MaxInputItems bounds the request's input items (history behind
	// previous_response_id not counted: it was admitted before).
	MaxInputItems int
	// MaxImageBytes bounds one image's decoded size.
	MaxImageBytes int64
	// MaxFileBytes bounds one file uploaded to the Files API; a larger upload is 413.
	MaxFileBytes int64
	// MaxTools bounds the tools of a request, the functions inside namespaces counted.
	MaxTools int
	// RequestTimeout bounds a POST /v1/responses from arrival to its last byte, the wait
	// for a slot included; a response it cuts is stored as incomplete with reason
	// "request_timeout". Background responses are not bound by it.
	RequestTimeout time.Duration
}

// Default limits.
const (
	DefaultMaxInputItems  = 4096
	DefaultMaxImageBytes  = 20 << 20
	DefaultMaxTools       = 256
	DefaultMaxFileBytes   = 32 << 20
	DefaultRequestTimeout = 15 * time.Minute
)

// WithDefaults is l with each zero field at its default.
func (l Limits) WithDefaults() Limits {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	l.MaxInputItems = def(l.MaxInputItems, DefaultMaxInputItems)
	l.MaxTools = def(l.MaxTools, DefaultMaxTools)
	if l.MaxImageBytes == 0 {
		l.MaxImageBytes = DefaultMaxImageBytes
	}
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.RequestTimeout == 0 {
		l.RequestTimeout = DefaultRequestTimeout
	}
	return l
}

// Check applies the limits to a decoded request: 400 with the offending param, or 413
// for an image too large.
func (l Limits) Check(req *hearth.CreateResponseRequest) error {
	// A name the runtime cannot hold is unknown without asking it: the runtime answers
	// 500 for a name too long for its files, and hearth would echo the whole name back.
	if !engine.ParseModelName(req.Model).Valid() {
		return hearth.ModelNotFound(textcap.Cut(req.Model, textcap.Model))
	}
	if l.MaxInputItems > 0 && len(req.Input) > l.MaxInputItems {
		return hearth.InvalidRequest("input", hearth.CodeArrayAboveMaxLength,
			fmt.Sprintf("input has %d items; this server accepts at most %d per request (--max-input-items). Continue a long conversation with previous_response_id.", len(req.Input), l.MaxInputItems))
	}
	if l.MaxTools > 0 {
		n := 0
		for _, t := range req.Tools {
			if t.Type == hearth.ToolNamespace {
				n += len(t.Tools)
			} else {
				n++
			}
		}
		if n > l.MaxTools {
			return hearth.InvalidRequest("tools", hearth.CodeArrayAboveMaxLength,
				fmt.Sprintf("tools has %d tools; this server accepts at most %d (--max-tools).", n, l.MaxTools))
		}
	}
	if l.MaxImageBytes > 0 {
		for i, it := range req.Input {
			parts := it.Content
			field := "content"
			if it.Output.Parts != nil {
				parts, field = it.Output.Parts, "output"
			}
			for j, p := range parts {
				if p.Type != hearth.PartInputImage {
					continue
				}
				if n := dataURLSize(p.ImageURL); n > l.MaxImageBytes {
					return &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest,
						Code: "image_too_large", Param: fmt.Sprintf("input[%d].%s[%d].image_url", i, field, j),
						Message: fmt.Sprintf("The image is %d bytes; this server accepts images of at most %d bytes (--max-image-bytes).", n, l.MaxImageBytes)}
				}
			}
		}
	}
	return nil
}

// dataURLSize is the decoded size of a base64 data URL (0 for anything else).
func dataURLSize(u string) int64 {
	if !strings.HasPrefix(u, "data:") {
		return 0
	}
	_, data, ok := strings.Cut(u, ",")
	if !ok {
		return 0
	}
	data = strings.TrimRight(data, "=")
	return int64(len(data)) * 3 / 4
}
