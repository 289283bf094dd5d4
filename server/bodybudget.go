package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
)

// What HTTP request bodies may hold in memory together. Each body is bounded
// (MaxBodyBytes), and each model's queue by count, but a body is read whole before
// its request waits for a slot: 64 waiting requests of 32 MiB each were 2 GiB. So the
// bytes of all bodies being read or held by a running handler are counted against
// one budget as they arrive, and let go when the handler returns; a body that does
// not fit is refused with 429 and Retry-After, as a full queue is. WebSocket
// messages have budgets of their own (socketbudget.go).

// DefaultRequestBytesTotal is Config.RequestBytesTotal's default: sixteen bodies of
// the default MaxBodyBytes.
const DefaultRequestBytesTotal = 16 * DefaultMaxBodyBytes

// heldBody counts what it reads against the server's budget.
type heldBody struct {
	io.ReadCloser
	budget *byteBudget
	held   int64
	header http.Header // the response's, for Retry-After
}

func (h *heldBody) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	if n > 0 {
		if !h.budget.take(int64(n)) {
			h.header.Set("Retry-After", "1")
			return 0, &hearth.Error{Status: http.StatusTooManyRequests, Type: hearth.ErrTypeTooManyRequests, Code: hearth.CodeTooManyRequests,
				Message: fmt.Sprintf("hearth holds as many request bodies as it may (%d bytes together, --request-bytes-total). Send the request again shortly.", h.budget.limit)}
		}
		h.held += int64(n)
	}
	return n, err
}

// holdsBody reports whether a request's body is read whole into memory by hearth:
// its own routes, and the passthrough's generating routes (which read it to check
// the model and the format). Model blobs stream through.
func holdsBody(r *http.Request) bool {
	p := r.URL.Path
	return !strings.HasPrefix(p, "/api/") || generatingPaths[p] || p == "/api/show"
}

// holdBody counts the request's body against the budget while the handlers after it
// run.
func (s middleware) holdBody(c *gin.Context) {
	if c.Request.Body == nil || c.Request.Body == http.NoBody || !holdsBody(c.Request) {
		return
	}
	h := &heldBody{ReadCloser: c.Request.Body, budget: s.requestBytes, header: c.Writer.Header()}
	c.Request.Body = h
	defer func() { s.requestBytes.give(h.held) }()
	c.Next()
}
