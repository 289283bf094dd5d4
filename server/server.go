// Package server is hearth's HTTP face: Gin routes for the Open Responses API, the
// OpenAI-style model list, health, and a passthrough of Ollama's own API to the runtime.
package server

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/admission"
	"hearth/internal/tracing"
	"hearth/respond"
	"hearth/server/console"
	"hearth/server/door"
	"hearth/telemetry"
	"hearth/vectorstores"
)

// Runtime is what the server needs of the runtime behind it, beside the engine:
// health, the model list, the loaded models (console, /v1/models); the same method set
// a pool asks of each of its runtimes. A runtime that also has its own HTTP API to pass
// through implements Passthrough. cmd/hearth gives it: a *pool.Pool of several
// runtimes, or one *ollama.Runtime (served as a pool of one: Config.Pool).
type Runtime = pool.Runtime

// Config gives a Server its parts, which the wiring builds (cmd/hearth/wire), and its
// HTTP settings.
type Config struct {
	Runtime Runtime
	// Pool is Runtime as a pool (Runtime itself when it is one): the runtimes
	// responses are placed on, and passthrough requests.
	Pool *pool.Pool
	// Engine runs responses (the passthrough's format checks use it too).
	Engine *engine.Engine
	// Core makes responses and serves conversations; the server hears the store's
	// changes it does not act on (Service.OnChange).
	Core *respond.Service
	// VectorStores keeps files and vector stores (the Files and Vector stores APIs).
	VectorStores *vectorstores.Service
	// Admissions places and admits the generating requests the server runs itself
	// (embeddings, the /api passthrough).
	Admissions *respond.Admissions
	// Metrics are /metrics' series (the server registers its own gauges there);
	// Models labels them by model; Health is the runtimes' (/healthz); Recent the
	// latest speeds per model (the console's live view).
	Metrics *telemetry.Metrics
	Models  *telemetry.ModelNames
	Health  *telemetry.RuntimeHealth
	Recent  *console.Recent
	// Database stores responses; nil means nothing is stored (and previous_response_id
	// finds nothing).
	Database Store
	// APIKeys, when not empty, are the keys clients must send as bearer tokens.
	APIKeys []string
	// Heartbeat is how long an SSE stream may stay silent before a comment is sent;
	// zero means DefaultHeartbeat.
	Heartbeat time.Duration
	// MaxBodyBytes bounds a request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Limits bound a request's size and time.
	Limits respond.Limits
	// WebSocketLifetime bounds a WebSocket connection on /v1/responses; zero means
	// DefaultWebSocketLifetime (60 minutes).
	WebSocketLifetime time.Duration
	// WebSocketQueueBytes bounds the bytes of the messages one WebSocket connection
	// has received and not finished (waiting, and the one running); zero means
	// DefaultWebSocketQueueBytes. WebSocketQueueBytesTotal bounds them over all
	// connections; zero means DefaultWebSocketQueueBytesTotal. A message is at most
	// MaxBodyBytes, as a request body is, and at most either bound (socketbudget.go).
	WebSocketQueueBytes, WebSocketQueueBytesTotal int64
	// RequestBytesTotal bounds the bytes of HTTP request bodies hearth holds at once;
	// zero means DefaultRequestBytesTotal.
	RequestBytesTotal int64
	// AllowOrigins are the browser origins (scheme://host[:port]) besides hearth's own
	// that may call hearth ("*": any). Requests without Origin (every non-browser
	// client) are not affected.
	AllowOrigins []string
	// AllowHosts are Host names, besides loopback ones, that a request arriving on a
	// loopback address may name (a local reverse proxy's public name; "*": any).
	AllowHosts []string
	// TrustedProxies are the addresses and CIDR ranges of reverse proxies whose
	// X-Forwarded-For and X-Real-IP headers name the client (clientaddr.go). None by
	// default: the client is the connection's peer, whatever the headers say.
	// CheckTrustedProxies validates them; New trusts none when they do not parse.
	TrustedProxies []string
	// BodyReadTimeout bounds reading a request body (plus the time its size needs at
	// 64 KiB/s); zero means DefaultBodyReadTimeout, negative no bound.
	BodyReadTimeout time.Duration
	// WriteTimeout bounds writing one SSE frame to a client; zero means
	// DefaultWriteTimeout. A client that reads nothing for this long is cut off and its
	// response stops.
	WriteTimeout time.Duration
	Logger       *slog.Logger
	// Tracing exports a span per request, and the core's and engine's spans under
	// it (internal/tracing); nil: tracing is off.
	Tracing *tracing.Provider
}

// Defaults for Config.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultMaxBodyBytes = 32 << 20 // room for a long agent history with a few images
)

// Server routes HTTP requests to hearth's parts.
type Server struct {
	// doors are the APIs served over the core besides /v1/responses (doors.go).
	doors []door.Door
	rt    Runtime
	// pool is rt as a pool (rt itself when it is one): the runtimes responses are
	// placed on.
	pool *pool.Pool
	// admissions places and admits generating requests (respond.Admissions).
	admissions *respond.Admissions
	engine     *engine.Engine
	db         Store
	keys       *keyring
	heartbeat  time.Duration
	maxBody    int64
	log        *slog.Logger
	router     *gin.Engine
	// proxy is the first runtime's with a passthrough, for requests of no model; nil
	// when none has one.
	proxy *httputil.ReverseProxy
	// proxies reach each runtime of the pool that has a passthrough, by label, for a
	// passthrough request placed on one (admitPassthrough).
	proxies map[string]*httputil.ReverseProxy
	// core makes responses and serves conversations (respond).
	core *respond.Service
	// changes closes the WebSockets of keys revoked (changes.go).
	changes *changes

	dbKeys     dbKeys
	admission  *admission.Controller
	limits     respond.Limits
	metrics    *telemetry.Metrics
	health     *telemetry.RuntimeHealth
	wsLifetime time.Duration
	// socketConnBytes and socketBytes bound what WebSocket messages hold, per
	// connection and in all (socketbudget.go).
	socketConnBytes int64
	socketBytes     *byteBudget
	// requestBytes bounds the HTTP request bodies held at once (bodybudget.go).
	requestBytes *byteBudget

	allowOrigins, allowHosts  []string
	bodyTimeout, writeTimeout time.Duration
	// models knows the runtime's model names, for metric labels.
	models *telemetry.ModelNames

	console *console.Console
	// recent keeps the latest speeds per model for the console's live view.
	recent *console.Recent
	// vectorStores keeps files and vector stores, ingests and searches them, and
	// reads the files of a request (package vectorstores).
	vectorStores *vectorstores.Service
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds a Server and its routes over the parts cfg gives it.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		doors: doors(),
		rt:    cfg.Runtime, pool: cfg.Pool, engine: cfg.Engine, db: cfg.Database, keys: newKeyring(cfg.APIKeys),
		core: cfg.Core, vectorStores: cfg.VectorStores, admissions: cfg.Admissions, admission: cfg.Admissions.Control(),
		metrics: cfg.Metrics, models: cfg.Models, health: cfg.Health, recent: cfg.Recent,
		heartbeat: cmp.Or(cfg.Heartbeat, DefaultHeartbeat), maxBody: cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		log: log, limits: cfg.Limits.WithDefaults(),
		wsLifetime:  cmp.Or(cfg.WebSocketLifetime, DefaultWebSocketLifetime),
		bodyTimeout: cmp.Or(cfg.BodyReadTimeout, DefaultBodyReadTimeout), writeTimeout: cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
	}
	s.socketConnBytes = cmp.Or(cfg.WebSocketQueueBytes, DefaultWebSocketQueueBytes)
	s.socketBytes = &byteBudget{limit: cmp.Or(cfg.WebSocketQueueBytesTotal, DefaultWebSocketQueueBytesTotal)}
	s.requestBytes = &byteBudget{limit: cmp.Or(cfg.RequestBytesTotal, DefaultRequestBytesTotal)}
	for _, o := range cfg.AllowOrigins {
		if o = normalizeOrigin(o); o != "" {
			s.allowOrigins = append(s.allowOrigins, o)
		}
	}
	for _, h := range cfg.AllowHosts {
		if h = normalizeHost(h); h != "" {
			s.allowHosts = append(s.allowHosts, h)
		}
	}
	s.dbKeys.db = cfg.Database
	s.metrics.Reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hearth_websocket_held_bytes",
		Help: "Bytes of WebSocket messages received and not finished (waiting, or running), over all connections.",
	}, func() float64 { return float64(s.socketBytes.used.Load()) }))
	s.metrics.Reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hearth_request_body_held_bytes",
		Help: "Bytes of HTTP request bodies read and held by requests in progress, over all requests (bounded by --request-bytes-total).",
	}, func() float64 { return float64(s.requestBytes.used.Load()) }))
	s.proxies = map[string]*httputil.ReverseProxy{}
	for _, l := range s.pool.Labels() {
		if pt, ok := s.pool.Runtime(l).(Passthrough); ok {
			s.proxies[l] = newRuntimeProxy(pt, log)
			if s.proxy == nil {
				s.proxy = s.proxies[l]
			}
		}
	}
	s.changes = newChanges()
	s.core.OnChange(s.changes.heard)
	if cfg.Database != nil {
		go s.recheckKeys()
	}
	s.console = consoleWiring{s}.newConsole()

	r := gin.New()
	s.trustProxies(r, cfg.TrustedProxies)
	mw := middleware{s}
	if cfg.Tracing != nil {
		r.Use(traceRequests(cfg.Tracing))
	}
	r.Use(mw.recoverPanics, mw.observe, mw.boundary)
	r.HandleMethodNotAllowed = true
	r.NoMethod(mw.methodNotAllowed)
	r.GET("/healthz", s.healthz)
	// The web console authenticates on its own (a session cookie); it is not under
	// requireJSON, it serves forms and pages.
	r.Any(console.Prefix, consoleWiring{s}.serveConsole)
	r.Any(console.Prefix+"/*path", consoleWiring{s}.serveConsole)
	authed := r.Group("/", mw.authenticate, mw.keylessForAdmin, mw.requireJSON, mw.limitBody, mw.holdBody)
	// Metrics name every key and its usage: admins only, once keys exist.
	authed.GET("/metrics", mw.requireAdmin, gin.WrapH(s.metrics.Handler()))
	responses := responsesAPI{s}
	authed.POST("/v1/responses", mw.requestTimeout, responses.createResponse)
	authed.GET("/v1/responses", responses.responsesSocket)
	authed.POST("/v1/responses/compact", mw.requestTimeout, responses.compactResponse)
	authed.POST("/v1/responses/input_tokens", mw.requestTimeout, responses.inputTokens)
	authed.GET("/v1/responses/:id", responses.getResponse)
	authed.DELETE("/v1/responses/:id", responses.deleteResponse)
	authed.GET("/v1/responses/:id/input_items", responses.listInputItems)
	authed.POST("/v1/responses/:id/cancel", responses.cancelResponse)
	conversationsAPI{s}.conversationRoutes(authed)
	(&filesAPI{s: s, vs: s.vectorStores}).routes(authed)
	authed.POST("/v1/embeddings", mw.requestTimeout, s.createEmbeddings)
	authed.GET("/v1/models", modelsAPI{s}.listModels)
	authed.GET("/v1/models/*model", modelsAPI{s}.getModel)
	// Ollama's own API, and its OpenAI-compatible endpoints hearth does not serve
	// itself, pass through so ollama clients (`OLLAMA_HOST=<hearth> ollama list`) work.
	// hearth answers /v1/embeddings itself (embeddings.go), and /v1/chat/completions
	// is a door over the core (doors.go).
	if s.proxy != nil {
		authed.Any("/api/*path", mw.passthroughAccess, s.admitPassthrough, s.passthrough)
		authed.POST("/v1/completions", mw.passthroughAccess, s.admitPassthrough, s.passthrough)
	}
	s.serveDoors(authed)
	r.NoRoute(func(c *gin.Context) {
		s.writeError(c, &hearth.Error{Status: http.StatusNotFound, Type: hearth.ErrTypeInvalidRequest, Code: "not_found",
			Message: "no route for " + c.Request.Method + " " + c.Request.URL.Path})
	})
	s.router = r
	return s
}

// middleware are the checks every request passes before its handler: a panic's
// recovery, the request's record (its log line and metrics), the origin and host
// boundary, authentication and roles, JSON, the body's bounds and the request timeout.
type middleware struct{ *Server }

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// limitBody bounds what a handler can read of the request body.
func (s middleware) limitBody(c *gin.Context) {
	// The runtime passthrough is exempt: model blobs are gigabytes.
	if c.Request.Body == nil || strings.HasPrefix(c.Request.URL.Path, "/api/") {
		return
	}
	limit := s.maxBody
	if c.Request.URL.Path == filesPath && c.Request.Method == http.MethodPost {
		// An upload is bounded by --max-file-bytes instead (files.go).
		if limit = uploadBodyLimit(s.limits.MaxFileBytes); limit < 0 {
			return
		}
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
}

// requestTimeout bounds a request's context by Limits.RequestTimeout.
func (s middleware) requestTimeout(c *gin.Context) {
	ctx, cancel := s.timed(c.Request.Context())
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

// healthz reports readiness of hearth, the runtime and the database; 503 when any part
// is not ready, so a load balancer or a supervisor can act on the status alone.
func (s *Server) healthz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	status := http.StatusOK
	check := func(p func(context.Context) error) gin.H {
		if err := p(ctx); err != nil {
			status = http.StatusServiceUnavailable
			return gin.H{"ok": false, "error": err.Error()}
		}
		return gin.H{"ok": true}
	}
	rt := check(func(ctx context.Context) error {
		// The pool serves while any of its runtimes does.
		err := s.pool.Ready(ctx)
		s.health.Checked(err)
		return err
	})
	// Not the runtime's URL: the embedded runtime's port is hearth's business, and
	// /healthz answers anyone.
	rt["embedded"] = s.rt.IsEmbedded()
	s.health.Describe(rt)
	body := gin.H{"runtime": rt, "runtimes": s.health.RuntimeStates()}
	if s.db != nil {
		var pingErr error
		db := check(func(ctx context.Context) error { pingErr = s.db.Ping(ctx); return pingErr })
		db["state"] = storeState(pingErr)
		body["database"] = db
	}
	body["status"] = "ok"
	if status != http.StatusOK {
		body["status"] = "unavailable"
	}
	c.JSON(status, body)
}
