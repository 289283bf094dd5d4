package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/gin-gonic/gin"
)

// Passthrough is a capability a runtime may have: its own HTTP API, which the server
// forwards unchanged under /api and on the OpenAI-compatible routes it does not serve
// itself (/v1/completions), so that the runtime's own clients work against
// hearth (`OLLAMA_HOST=<hearth> ollama list` for engine/ollama). The server finds it by
// a type assertion on each runtime of the pool; a runtime without it is left out of
// the passthrough, and with no runtime that has it those routes are not served.
type Passthrough interface {
	// PassthroughTarget is the base address of the runtime's API and the transport
	// that reaches it (an embedded runtime has no network address of its own).
	PassthroughTarget() (*url.URL, http.RoundTripper)
}

// newRuntimeProxy forwards requests unchanged to the runtime. FlushInterval -1 flushes
// every write at once, so streamed generations and pull progress arrive as the runtime
// sends them.
func newRuntimeProxy(rt Passthrough, log *slog.Logger) *httputil.ReverseProxy {
	target, transport := rt.PassthroughTarget()
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The runtime checks Host against its allow-list (DNS rebinding protection);
			// it is hearth that talks to it now, from loopback.
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Origin")
		},
		// The runtime's own transport: an embedded runtime has no network address.
		Transport:     transport,
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
	if p := s.proxies[c.GetString(passthroughRuntimeKey)]; p != nil {
		p.ServeHTTP(c.Writer, c.Request)
		return
	}
	if c.Request.Method == http.MethodGet && c.Request.URL.Path == "/api/tags" && len(s.proxies) > 1 {
		s.unionTags(c)
		return
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

// passthroughRuntimeKey is the gin context key of the runtime a passthrough request for
// a model was placed on.
const passthroughRuntimeKey = "hearth.passthrough_runtime"

// passthroughCandidates are the runtimes a passthrough request for model may go to: the
// pool's candidates that have a passthrough, else every runtime that has one.
func (s *Server) passthroughCandidates(model string) []string {
	var out []string
	for _, l := range s.pool.Candidates(model) {
		if s.proxies[l] != nil {
			out = append(out, l)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, l := range s.pool.Labels() {
		if s.proxies[l] != nil {
			out = append(out, l)
		}
	}
	return out
}

// unionTags answers GET /api/tags for a pool of several runtimes with a passthrough:
// every model of every one that answers, once (the first runtime's entry), as Ollama
// lists them, so that ollama clients pointed at hearth see the pool's models.
func (s *Server) unionTags(c *gin.Context) {
	var models []json.RawMessage
	seen := map[string]bool{}
	answered := false
	var lastErr error
	for _, l := range s.pool.Labels() {
		rt, ok := s.pool.Runtime(l).(Passthrough)
		if !ok {
			continue
		}
		target, transport := rt.PassthroughTarget()
		req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodGet, target.JoinPath("/api/tags").String(), nil)
		if err != nil {
			lastErr = err
			continue
		}
		resp, err := transport.RoundTrip(req)
		if err != nil {
			lastErr = err
			continue
		}
		var list struct {
			Models []json.RawMessage `json:"models"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&list)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			lastErr = fmt.Errorf("%s: /api/tags answered %d: %v", l, resp.StatusCode, err)
			continue
		}
		answered = true
		for _, m := range list.Models {
			var name struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(m, &name) == nil && !seen[name.Name] {
				seen[name.Name] = true
				models = append(models, m)
			}
		}
	}
	if !answered {
		http.Error(c.Writer, `{"error":"runtime unavailable: `+jsonEscape(fmt.Sprint(lastErr))+`"}`, http.StatusBadGateway)
		return
	}
	if models == nil {
		models = []json.RawMessage{}
	}
	c.JSON(http.StatusOK, gin.H{"models": models})
}
