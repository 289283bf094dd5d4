package server

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"

	"github.com/gin-gonic/gin"
)

// newRuntimeProxy forwards requests unchanged to the runtime. FlushInterval -1 flushes
// every write at once, so streamed generations and pull progress arrive as the runtime
// sends them.
func newRuntimeProxy(rt Runtime, log *slog.Logger) *httputil.ReverseProxy {
	target := rt.Target()
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The runtime checks Host against its allow-list (DNS rebinding protection);
			// it is hearth that talks to it now, from loopback.
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Origin")
		},
		// The runtime's own transport: an embedded runtime has no network address.
		Transport:     rt.Transport(),
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errBodyTimeout) || bodyExpired(r) {
				// The client's fault, not the runtime's: it did not send its body in time.
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusRequestTimeout)
				w.Write([]byte(`{"error":{"message":"The request body did not arrive in time.","type":"invalid_request_error","param":null,"code":"request_body_timeout"}}`))
				return
			}
			log.Warn("runtime passthrough failed", "path", r.URL.Path, "error", err)
			http.Error(w, `{"error":"runtime unavailable: `+jsonEscape(err.Error())+`"}`, http.StatusBadGateway)
		},
	}
}

func (s *Server) passthrough(c *gin.Context) {
	// By default Go's HTTP/1 server drains and closes the request body as soon as the
	// response starts. The proxy streams the runtime's first bytes (a pull's "pulling
	// manifest") while its transport may still be reading the request body to EOF; the
	// closed body then fails that read, the transport drops the runtime connection, and
	// the client got a stream cut short. Full duplex keeps the body open.
	if err := http.NewResponseController(c.Writer).EnableFullDuplex(); err != nil {
		s.log.Debug("passthrough without full duplex", "error", err)
	}
	s.proxy.ServeHTTP(c.Writer, c.Request)
}

func jsonEscape(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		case '\n':
			b = append(b, '\\', 'n')
		default:
			if r < 0x20 {
				continue
			}
			b = append(b, string(r)...)
		}
	}
	return string(b)
}
