package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/internal/textcap"
	"hearth/respond"
)

// The browser and network boundary. A web page the user visits can make the browser
// send requests to a hearth on loopback (a cross-site "simple" POST needs no CORS
// preflight), and a DNS-rebinding page can make them look same-origin to the browser.
// The runtime's own Origin and Host checks never see these requests: the passthrough
// talks to the runtime from loopback with hearth's own Host. So hearth checks both,
// on every route, before authentication.

// Boundary settings.
const (
	// DefaultBodyReadTimeout bounds how long reading a request body may take, beyond
	// the time its size needs at minBodyRate. Headers are bounded by the HTTP server's
	// ReadHeaderTimeout; this is the part after them.
	DefaultBodyReadTimeout = 30 * time.Second
	// minBodyRate is the slowest a body may arrive once DefaultBodyReadTimeout is used
	// up: each byte read buys 1/minBodyRate seconds more, so a large upload on a slow
	// link (a model blob) finishes while a client trickling a few bytes is cut off.
	minBodyRate = 64 << 10 // bytes per second
)

// boundary checks Host and Origin, answers CORS preflights of the origins the operator
// allows, and bounds the time to read the request body.
func (s middleware) boundary(c *gin.Context) {
	r := c.Request
	if loopbackConn(r) && !s.hostAllowed(r.Host) {
		s.writeError(c, &hearth.Error{Status: http.StatusForbidden, Type: hearth.ErrTypeInvalidRequest,
			Code: "host_not_allowed", Param: "Host",
			Message: "Host " + quoteHeader(r.Host) + " is not this server's: a request that reached hearth on a loopback address must name a loopback host (localhost, 127.0.0.1, [::1]). " +
				"This protects against DNS rebinding; an operator adds names with --allow-host."})
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		own := sameOrigin(origin, r.Host)
		if !own && !s.originAllowed(origin) {
			s.writeError(c, &hearth.Error{Status: http.StatusForbidden, Type: hearth.ErrTypeInvalidRequest,
				Code: "origin_not_allowed", Param: "Origin",
				Message: "Origin " + quoteHeader(origin) + " may not use this server: a web page of another origin cannot call hearth unless the operator allows it with --allow-origin."})
			return
		}
		if !own {
			h := c.Writer.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "x-request-id, request-id, x-hearth-ignored, retry-after, "+HeaderCompactionFallback)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				// A preflight carries no credentials; it only asks what the real request may
				// send, which then meets authentication like any other.
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, HEAD")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id, OpenAI-Beta, X-Stainless-Lang, X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Retry-Count, X-Stainless-Timeout, X-Api-Key, Anthropic-Version, Anthropic-Beta, Anthropic-Dangerous-Direct-Browser-Access")
				h.Set("Access-Control-Max-Age", "600")
				c.AbortWithStatus(http.StatusNoContent)
				return
			}
		}
	}
	if s.bodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		rc := http.NewResponseController(c.Writer)
		start := time.Now()
		if rc.SetReadDeadline(start.Add(s.bodyTimeout)) == nil {
			b := &deadlineBody{ReadCloser: r.Body, rc: rc, start: start, timeout: s.bodyTimeout}
			b.deadline.Store(start.Add(s.bodyTimeout).UnixNano())
			r.Body = b
			// Also in the context: the passthrough's proxy wraps the body it reads.
			c.Request = r.WithContext(context.WithValue(r.Context(), bodyKey{}, b))
		}
	}
}

// loopbackConn reports whether r came in on a loopback address of this machine. The
// Host check applies to those: a DNS-rebinding page makes a local browser connect to
// 127.0.0.1 with the attacker's name as Host, whatever address hearth listens on.
func loopbackConn(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || a == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// hostAllowed reports whether a request on loopback may name host: a loopback name or
// address, this machine's host name (Debian and Ubuntu resolve it to 127.0.1.1), or one
// the operator allowed. An empty Host (HTTP/1.0) is no browser's.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	if name, err := os.Hostname(); err == nil && strings.EqualFold(host, name) {
		return true
	}
	for _, h := range s.allowHosts {
		if h == "*" || h == host {
			return true
		}
	}
	return false
}

// sameOrigin reports whether origin is hearth's own as the browser reached it: the
// scheme, host and port of the request's Host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

func (s *Server) originAllowed(origin string) bool {
	o := normalizeOrigin(origin)
	for _, a := range s.allowOrigins {
		if a == "*" || a == o {
			return true
		}
	}
	return false
}

// originPatterns are the allowed origins as the WebSocket library matches them: by host.
func (s *Server) originPatterns() []string {
	var out []string
	for _, o := range s.allowOrigins {
		if o == "*" {
			out = append(out, "*")
		} else if u, err := url.Parse(o); err == nil && u.Host != "" {
			out = append(out, u.Host)
		}
	}
	return out
}

// normalizeOrigin lowercases an origin and drops a trailing slash, so a setting written
// as https://App.example/ matches what browsers send.
func normalizeOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.Trim(strings.ToLower(strings.TrimSpace(h)), "[]"), ".")
}

// quoteHeader quotes a header value for an error message, cut short: the message must
// not echo a huge header back.
func quoteHeader(v string) string {
	return "'" + textcap.Cut(v, 200) + "'"
}

// requireJSON refuses a POST whose body is declared as anything but JSON: 415 with the
// envelope. The bodies a web page can send cross-site without a preflight are declared
// text/plain, application/x-www-form-urlencoded or multipart/form-data; JSON cannot be
// sent that way. A body with no Content-Type is read as JSON: scripts and simple HTTP
// clients often send none, and a browser sending one cross-site (a fetch of an untyped
// Blob) always sends Origin, which boundary has checked. Bodies of the passthrough's
// model blobs (/api/blobs) are binary and exempt; they are admin-only besides.
func (s middleware) requireJSON(c *gin.Context) {
	r := c.Request
	ct := r.Header.Get("Content-Type")
	// An upload to the Files API is multipart; uploadFile checks its type.
	if r.Method != http.MethodPost || r.ContentLength == 0 || ct == "" || strings.HasPrefix(r.URL.Path, "/api/blobs/") || r.URL.Path == filesPath {
		return
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return
	}
	s.writeError(c, &hearth.Error{Status: http.StatusUnsupportedMediaType, Type: hearth.ErrTypeInvalidRequest,
		Code: "unsupported_media_type", Param: "Content-Type",
		Message: "The request body is declared as " + quoteHeader(ct) + "; send JSON with 'Content-Type: application/json' (curl: -H 'Content-Type: application/json')."})
}

// deadlineBody extends the connection's read deadline as the body arrives (see
// minBodyRate) and lifts it at the end of the body, so what follows on the connection
// (a WebSocket, a long stream's disconnect detection) is not cut by it.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	start   time.Time
	timeout time.Duration
	n       int64
	// deadline (unix nanoseconds) and done are read from other goroutines too: the
	// passthrough's transport reads the body while its error handler asks expired.
	deadline atomic.Int64
	done     atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	switch {
	case b.done.Load():
	case err == io.EOF:
		b.done.Store(true)
		b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		if isTimeout(err) {
			err = errBodyTimeout
		}
	default:
		d := b.start.Add(b.timeout + time.Duration(b.n)*time.Second/minBodyRate)
		b.deadline.Store(d.UnixNano())
		b.rc.SetReadDeadline(d)
	}
	return n, err
}

// bodyExpired reports whether r's body was cut by the body read timeout. The
// passthrough asks it: the cut also cancels the request's context, which the proxy may
// report first.
func bodyExpired(r *http.Request) bool {
	b, ok := r.Context().Value(bodyKey{}).(*deadlineBody)
	return ok && !b.done.Load() && time.Now().UnixNano() >= b.deadline.Load()
}

type bodyKey struct{}

// errBodyTimeout is the error of a body read cut by the body read timeout; readBody
// makes it a 408.
var errBodyTimeout = errors.New("the request body was not sent in time")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// methodNotAllowed answers a known path with a method it does not serve, in the JSON
// envelope like every other error (gin has set the Allow header).
func (s middleware) methodNotAllowed(c *gin.Context) {
	s.writeError(c, &hearth.Error{Status: http.StatusMethodNotAllowed, Type: hearth.ErrTypeInvalidRequest,
		Code: "method_not_allowed", Message: "Method " + c.Request.Method + " is not allowed on " + textcap.Cut(c.Request.URL.Path, 200) + "."})
}

// Bounds of the x-hearth-ignored header (and its log line): the field names come from
// the client, and a 100 KB name must not become a 100 KB header.
const (
	maxIgnoredNames   = 16
	maxIgnoredNameLen = 64
)

// boundIgnored keeps the first maxIgnoredNames names, each cut to maxIgnoredNameLen
// bytes of printable ASCII, and says how many more there were.
func boundIgnored(names []string) []string {
	out := make([]string, 0, min(len(names), maxIgnoredNames+1))
	for i, n := range names {
		if i == maxIgnoredNames {
			out = append(out, fmt.Sprintf("(%d more)", len(names)-i))
			break
		}
		b := make([]byte, 0, min(len(n), maxIgnoredNameLen))
		for j := 0; j < len(n) && len(b) < maxIgnoredNameLen; j++ {
			if c := n[j]; c > ' ' && c <= '~' && c != ',' {
				b = append(b, c)
			} else {
				b = append(b, '?')
			}
		}
		if len(n) > maxIgnoredNameLen {
			b = append(b, "..."...)
		}
		out = append(out, string(b))
	}
	return out
}

// logModel is a model name as logs and error context show it.
func logModel(name string) string { return respond.LogModel(name) }
