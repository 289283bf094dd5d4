package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/ollama/chatparser"
	"hearth/filesearch"
	"hearth/internal/cpubuild"
	"hearth/internal/tracing"
	"hearth/mcp"
	"hearth/respond"
	"hearth/server"
	"hearth/storage"
	"hearth/telemetry"
	"hearth/toolsearch"
	"hearth/vectorstores"
)

type serveOptions struct {
	addr        string
	dataDir     string
	database    string
	ollamaURL   string
	runtimes    []string
	modelsDir   string
	logLevel    string
	shutdownFor time.Duration
	apiKeys     []string
	noAuth      bool
	modelsFile  string
	heartbeat   time.Duration
	wsLifetime  time.Duration
	wsQueue     int64
	wsQueueAll  int64
	bodiesAll   int64
	journalKeep time.Duration
	// replicaLease is how long this replica's lease lasts without renewal
	// (respond.Service.KeepLeases).
	replicaLease time.Duration

	logFormat     string
	logContent    bool
	maxConcurrent int
	maxQueue      int
	maxQueueKey   int
	rateLimit     int
	maxBody       int64
	limits        respond.Limits
	idleTimeout   time.Duration
	checkEvery    time.Duration
	allowOrigins  []string
	allowHosts    []string
	trustProxies  []string
	bodyTimeout   time.Duration
	writeTimeout  time.Duration
	newDatabase   bool
	gpu           bool
	mcp           []string
	mcpAllowURL   []string
	fileAllowURL  []string
	embedModel    string
	ingestWorkers int
	indexMemory   int64
	mcpOutputCap  int
	modelAliases  []string
	// otlpEndpoint is where OpenTelemetry traces go (internal/tracing); "" leaves it
	// to the OTEL_EXPORTER_OTLP_* variables, and with none of them tracing is off.
	otlpEndpoint string
}

func serveCommand() *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Open Responses API",
		Long: `Serve the Open Responses API on --addr.

The runtime: by default hearth starts Ollama's server inside this process, reachable from
this process only (it has no port), and re-executes itself as "hearth runner" for model
runners, which end when hearth ends. --ollama, or OLLAMA_HOST, selects an Ollama server you
already run instead.

Several runtimes: --runtime, repeated (or comma-separated), names each: "embedded" or an
Ollama URL, optionally with ?slots=N (its parallel slots; default --max-concurrent, else
OLLAMA_NUM_PARALLEL, else 1). hearth serves the union of their models; a continuation
(previous_response_id, the next create on a WebSocket, the same prompt_cache_key) goes to
the runtime that served its parent, anything else to the least loaded runtime that has the
model. The x-hearth-runtime header says which served a response. --ollama URL is
--runtime URL.

Models: the embedded runtime reads them from --models, else OLLAMA_MODELS, else Ollama's
default directory (~/.ollama/models), so models you pulled with ollama are there.

Environment: every flag can also be set as HEARTH_<FLAG> (shown next to each flag).
OLLAMA_HOST selects an external runtime when --ollama is not given; OLLAMA_MODELS sets the
models directory; other OLLAMA_* variables (OLLAMA_KEEP_ALIVE, OLLAMA_NUM_PARALLEL,
OLLAMA_CONTEXT_LENGTH, OLLAMA_DEBUG, ...) configure the embedded runtime as they configure
ollama serve.`,
		Example: `  hearth serve
  hearth serve --addr 0.0.0.0:8080 --data /var/lib/hearth
  hearth serve --ollama http://127.0.0.1:11434
  hearth serve --runtime embedded --runtime 'http://gpu-box:11434?slots=4'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), o) },
	}
	addServeFlags(cmd.Flags(), &o)
	bindEnv(cmd)
	return cmd
}

// addServeFlags declares serve's settings; doctor declares the same, so one config
// file, the same HEARTH_* variables and the same flags mean the same to both.
func addServeFlags(f *pflag.FlagSet, o *serveOptions) {
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&o.dataDir, "data", defaultDataDir(), "directory for hearth's database and keys")
	f.StringVar(&o.database, "database", "", "where hearth keeps responses, chains, journals, conversations, files and keys: a PostgreSQL URL (postgres://user@host:5432/db; PG* environment variables fill in what it leaves out), or a SQLite file (a path or sqlite://PATH) (default: hearth.db in --data)")
	f.StringVar(&o.ollamaURL, "ollama", "", "URL of an Ollama server to use instead of the embedded runtime (default $OLLAMA_HOST if set)")
	f.StringSliceVar(&o.runtimes, "runtime", nil, "a runtime to serve from: embedded, or an Ollama URL, optionally with ?slots=N (repeat, or comma-separate, for several; default embedded)")
	f.StringVar(&o.modelsDir, "models", "", "models directory of the embedded runtime (default $OLLAMA_MODELS or ~/.ollama/models)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&o.shutdownFor, "shutdown-timeout", 10*time.Second, "how long in-flight requests may run after SIGINT or SIGTERM")
	f.StringSliceVar(&o.apiKeys, "admin-key", nil, "admin API key clients may send as 'Authorization: Bearer <key>' (repeat, or comma-separate, for several); not $HEARTH_API_KEY, which is the CLI's client key")
	f.BoolVar(&o.noAuth, "insecure-no-auth", false, "allow listening on a non-loopback address without API keys")
	f.StringVar(&o.modelsFile, "models-file", "", "a models.json whose model formats extend or override the built-in ones")
	f.DurationVar(&o.heartbeat, "sse-heartbeat", server.DefaultHeartbeat, "longest silence in an SSE stream before a keep-alive comment")
	f.DurationVar(&o.wsLifetime, "websocket-lifetime", server.DefaultWebSocketLifetime, "how long a WebSocket connection on /v1/responses may live; then websocket_connection_limit_reached")
	f.Int64Var(&o.wsQueue, "websocket-queue-bytes", server.DefaultWebSocketQueueBytes, "bytes of response.create messages one WebSocket connection may hold (waiting, and the one running); a message beyond it is refused with websocket_queue_full")
	f.Int64Var(&o.bodiesAll, "request-bytes-total", server.DefaultRequestBytesTotal, "bytes of HTTP request bodies all requests together may hold; a body beyond it is refused with 429 and Retry-After")
	f.Int64Var(&o.wsQueueAll, "websocket-queue-total-bytes", server.DefaultWebSocketQueueBytesTotal, "bytes of response.create messages all WebSocket connections together may hold; a message beyond it is refused with websocket_queue_full")
	f.DurationVar(&o.journalKeep, "journal-retention", respond.DefaultJournalRetention, "how long the event journal of a finished response is kept for resuming and replaying its stream (0: as long as the response)")
	f.DurationVar(&o.replicaLease, "replica-lease", respond.DefaultReplicaLease, "on PostgreSQL, how long another replica waits after this one stops renewing its lease (killed, or cut off from the database) before it fails this one's in-flight responses; renewed every third of it")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.BoolVar(&o.logContent, "log-content", false, "log each response's input and output text (off: logs never hold prompts)")
	f.IntVar(&o.maxConcurrent, "max-concurrent", 0, "generations per model at once (default: the runtime's parallel slots, $OLLAMA_NUM_PARALLEL or 1)")
	f.IntVar(&o.maxQueue, "max-queue", wire.DefaultMaxQueue, "requests that may wait per model; beyond it 429 with Retry-After (-1: none may wait)")
	f.IntVar(&o.maxQueueKey, "max-queue-per-key", 0, "requests one key may have waiting per model (0: only --max-queue)")
	f.IntVar(&o.rateLimit, "rate-limit", 0, "responses one key may start per minute, in bursts of as many (0: no limit)")
	f.Int64Var(&o.maxBody, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body; larger is 413")
	f.IntVar(&o.limits.MaxInputItems, "max-input-items", respond.DefaultMaxInputItems, "most input items per request; more is 400 (-1: no limit)")
	f.Int64Var(&o.limits.MaxImageBytes, "max-image-bytes", respond.DefaultMaxImageBytes, "largest decoded image; larger is 413 (-1: no limit)")
	f.Int64Var(&o.limits.MaxFileBytes, "max-file-bytes", respond.DefaultMaxFileBytes, "largest file uploaded to /v1/files; larger is 413 (-1: no limit but --request-bytes-total)")
	f.IntVar(&o.limits.MaxTools, "max-tools", respond.DefaultMaxTools, "most tools per request; more is 400 (-1: no limit)")
	f.DurationVar(&o.limits.RequestTimeout, "request-timeout", respond.DefaultRequestTimeout, "longest a response may take, the wait in the queue included; then it ends incomplete (reason request_timeout) (-1s: none)")
	f.DurationVar(&o.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	f.StringSliceVar(&o.allowOrigins, "allow-origin", nil, "browser origins (scheme://host:port) besides hearth's own that may call it, e.g. a web app's; '*' allows any (repeat, or comma-separate)")
	f.StringSliceVar(&o.allowHosts, "allow-host", nil, "Host names besides loopback ones that requests arriving on a loopback address may use, e.g. a local reverse proxy's public name (repeat, or comma-separate)")
	f.StringSliceVar(&o.trustProxies, "trusted-proxies", nil, "addresses or CIDR ranges of reverse proxies whose X-Forwarded-For and X-Real-IP name the client (for per-address rate limits and logs); default none: the client is the connection's peer (repeat, or comma-separate)")
	f.DurationVar(&o.bodyTimeout, "body-timeout", server.DefaultBodyReadTimeout, "how long a client may take to send a request body (more for a large body, at 64 KiB/s); then 408 (-1s: no bound)")
	f.DurationVar(&o.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "how long one SSE frame may wait on a client that does not read; then the stream is cut and its response stops")
	f.DurationVar(&o.checkEvery, "runtime-check", telemetry.DefaultSuperviseEvery, "how often hearth checks that the runtime answers (/healthz, hearth_runtime_up)")
	f.BoolVar(&o.newDatabase, "new-database", false, "start with a new, empty database when the one in --data is missing, empty or damaged (a damaged one is moved aside); use once, after deciding not to restore a backup")
	f.BoolVar(&o.gpu, "gpu", true, "let the embedded runtime use a GPU backend built beside hearth (make build GPU=cuda or GPU=vulkan); false runs on the CPU")
	f.StringArrayVar(&o.mcp, "mcp", nil, "an MCP server requests may use as a tool ({\"type\":\"mcp\",\"server_label\":LABEL}): 'LABEL=COMMAND ARGS...' (hearth starts it, over stdio) or 'LABEL=https://...' (streamable HTTP); repeat for several, or [mcp.LABEL] tables in the config file")
	f.StringVar(&o.embedModel, "embedding-model", "", "embedding model of a vector store created without one (default: the only embedding model the runtimes serve)")
	f.IntVar(&o.ingestWorkers, "ingest-workers", vectorstores.DefaultIngestWorkers, "vector store files read and embedded at once")
	f.Int64Var(&o.indexMemory, "vector-index-memory", vectorstores.DefaultIndexMemory, "bytes of vector stores' search indexes kept in memory; a store whose index needs more than half is not searched (400 vector_store_too_large)")
	f.StringSliceVar(&o.fileAllowURL, "file-allow-url", nil, "URL patterns ('*' matches anything) an input_file's file_url may name; hearth fetches it (at most --max-file-bytes, no redirects); a loopback or private host must be named without a wildcard (default: none)")
	f.StringSliceVar(&o.mcpAllowURL, "mcp-allow-url", nil, "URL patterns ('*' matches anything) of MCP servers a request may name itself as server_url; a loopback or private host must be named without a wildcard (default: none)")
	f.StringSliceVar(&o.modelAliases, "model-alias", nil, "serve a model under other names: 'PATTERN=MODEL', PATTERN an exact name or a glob ('claude-*=qwen3:8b' serves Claude Code's names); an exact name wins, then the first glob that matches (repeat, or comma-separate; a list in the config file)")
	f.IntVar(&o.mcpOutputCap, "mcp-output-cap", mcp.DefaultOutputCap, "largest MCP tool output in bytes the model reads; longer output is cut, with a note")
	f.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "export OpenTelemetry traces over OTLP/HTTP to this collector base URL, e.g. http://127.0.0.1:4318 (Jaeger, Tempo, an OpenTelemetry Collector); default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or $OTEL_EXPORTER_OTLP_ENDPOINT, else no tracing")
}

// openServeStore opens the database hearth serves from: PostgreSQL, or a SQLite file
// with the file's checks (openServeDatabase). On PostgreSQL this process is one replica
// among others; its name (the host and the listening address, stable across its
// restarts and different for replicas on one host) marks the responses it serves, and
// RecoverInFlight fails only those.
func openServeStore(ctx context.Context, spec databaseSpec, o serveOptions, log *slog.Logger) (storage.Store, error) {
	if spec.postgresURL == "" {
		db, err := openServeDatabase(ctx, o.dataDir, spec.sqlitePath, o.newDatabase, log)
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	host, _ := os.Hostname()
	db, err := openPostgres(ctx, spec.postgresURL, host+" "+o.addr, log)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", spec, err)
	}
	log.Info("database opened", "postgres", spec.String())
	return db, nil
}

func serve(parent context.Context, o serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q is not a level\nfix: give debug, info, warn or error (or HEARTH_LOG_LEVEL, or log-level in the config file)", o.logLevel)
	}
	var handler slog.Handler
	switch o.logFormat {
	case "text":
		handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	case "json":
		handler = slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	default:
		return fmt.Errorf("--log-format %q is not a format\nfix: give text or json (or HEARTH_LOG_FORMAT, or log-format in the config file)", o.logFormat)
	}
	settings, err := resolveServe(o)
	if err != nil {
		return err
	}
	// The address first, before anything loads: a port in use is said at once, not
	// after the database and the runtime have started. Held from here, so nothing
	// takes it meanwhile; connections wait in its backlog until hearth serves.
	ln, err := listen(o.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	log := slog.New(handler)
	warnClientKey(log)
	// Traces are set up before anything starts, so that a bad endpoint stops the start.
	traces, err := tracing.New(parent, tracing.Config{Endpoint: o.otlpEndpoint, Version: version, Logger: log})
	if err != nil {
		return fmt.Errorf("--otlp-endpoint (HEARTH_OTLP_ENDPOINT): %w", err)
	}
	if traces != nil {
		log.Info("exporting OpenTelemetry traces", "endpoint", traces.Where)
		defer func() {
			// The spans of the last requests are sent before hearth exits.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := traces.Shutdown(ctx); err != nil {
				log.Warn("traces not all exported at shutdown", "error", err)
			}
		}()
	}
	if limit := min(o.wsQueue, o.wsQueueAll); limit < o.maxBody {
		// Not an error: an operator may mean it. But a WebSocket message then has a
		// smaller limit than an HTTP body, which should not come as a surprise.
		log.Warn("WebSocket messages are limited below --max-body-bytes by the WebSocket queue bounds",
			"websocket_message_limit", limit, "max_body_bytes", o.maxBody)
	}

	// MCP servers are checked before anything starts; none runs before a request uses it.
	servers := settings.mcpServers
	hosted, err := mcp.New(mcp.Options{Servers: servers, AllowURL: o.mcpAllowURL, OutputCap: o.mcpOutputCap, Log: log})
	if err != nil {
		return err
	}
	// Servers hearth started stop with it.
	defer hosted.Close()

	// Signals end the server; the embedded runtime also hears them and stops its runners.
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()

	formats, aliases := settings.formats, settings.aliases
	// The embedded runtime's own chat reads with the formats of a --models file too
	// (their chat_parsers), registered before the runtime starts.
	chatparser.Register(formats)
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}

	// The database before the key: a seal.key then means the directory held a database
	// (see checkDatabaseNotLost).
	spec := settings.database
	db, err := openServeStore(ctx, spec, o, log)
	if err != nil {
		return err
	}
	defer db.Close()
	dbName := spec.String()
	if f, ok := db.(interface{ Path() string }); ok {
		dbName = f.Path() // the SQLite file, absolute
	}

	// The key of encrypted reasoning and compaction items: kept with the database, so
	// the blobs stateless clients (Codex) hold stay valid across restarts (and, on
	// PostgreSQL, across replicas).
	sealKey, err := loadSealKey(ctx, db, o.dataDir, log)
	if err != nil {
		return err
	}

	// Keys created with `hearth keys create` count as keys for exposure.
	hasDBKeys, err := db.HasKeys(ctx)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := checkExposure(o.addr, o.apiKeys, o.noAuth || hasDBKeys); err != nil {
		return err
	}
	// Responses a crash left in flight can never finish now; say so in their rows.
	if n, err := db.RecoverInFlight(ctx); err != nil {
		return fmt.Errorf("database recovery: %w", err)
	} else if n > 0 {
		log.Warn("marked responses left in flight by a previous run as failed", "count", n)
	}
	// Held before serving: the other replicas leave what this one creates alone
	// while it renews the lease (KeepLeases).
	if err := db.RenewLease(ctx, o.replicaLease); err != nil {
		return fmt.Errorf("database: %w", err)
	}

	rts, err := openRuntimes(ctx, settings, o, log)
	if err != nil {
		return err
	}
	rt, adm, err := rts.pool(o, log)
	if err != nil {
		return err
	}
	adm.MaxQueue, adm.MaxQueuePerKey, adm.RatePerMinute = o.maxQueue, o.maxQueueKey, o.rateLimit

	eng := engine.New(rt.Seam(), formats, log)
	eng.Aliases = aliases
	if len(o.modelAliases) > 0 {
		log.Info("model aliases", "aliases", o.modelAliases)
	}
	// The hosted tool kinds requests may use, one line each. MCP is always registered:
	// with no servers configured, a request's mcp tool is a 400 that says so.
	var mcpBackend mcp.Servers
	if len(servers) > 0 || len(o.mcpAllowURL) > 0 {
		mcpBackend = hosted
		log.Info("mcp servers", "labels", hosted.Labels(), "allow_url", o.mcpAllowURL)
	}
	eng.RegisterHosted(mcp.NewKind(mcpBackend, log))
	if err := registerWebSearch(eng, hosted, configWebSearch, log); err != nil {
		return err
	}
	// Tool search needs nothing configured: it searches the request's own tools.
	eng.RegisterHosted(toolsearch.NewKind(log))

	fileURLs := settings.fileURLs
	h := wire.New(wire.Config{
		FileURLs: fileURLs,
		Runtime:  rt, Engine: eng, Database: db, Collectors: append(append(hosted.Collectors(), promptCacheCollectors()...), openedCacheCollectors()...),
		APIKeys: o.apiKeys, Heartbeat: o.heartbeat, WebSocketLifetime: o.wsLifetime, WebSocketQueueBytes: o.wsQueue, WebSocketQueueBytesTotal: o.wsQueueAll, RequestBytesTotal: o.bodiesAll, Logger: log, LogContent: o.logContent,
		MaxBodyBytes: o.maxBody, Limits: o.limits, Seal: sealKey,
		AllowOrigins: o.allowOrigins, AllowHosts: o.allowHosts, TrustedProxies: o.trustProxies, BodyReadTimeout: o.bodyTimeout, WriteTimeout: o.writeTimeout,
		Admission: adm, EmbeddingModel: o.embedModel, IngestWorkers: o.ingestWorkers,
		VectorIndexMemory: o.indexMemory, Tracing: traces,
	})
	// file_search searches the vector stores this server keeps, through the same
	// service: the kind is registered once it exists, before hearth serves.
	vs := h.VectorStores
	eng.RegisterHosted(filesearch.NewKind(vs, log))
	// Vector store files a stopped run left in_progress are read again from the start.
	if n, err := vs.ResumeIngestion(ctx); err != nil {
		return fmt.Errorf("vector store ingestion: %w", err)
	} else if n > 0 {
		log.Info("resumed vector store files left in progress by a previous run", "count", n)
	}
	go h.Health.Supervise(ctx, o.checkEvery)
	go h.Core.PruneJournals(ctx, o.journalKeep)
	go vs.Sweep(ctx)
	go h.Core.KeepLeases(ctx, o.replicaLease)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       o.idleTimeout,
	}
	log.Info("hearth listening", "addr", "http://"+ln.Addr().String(), "database", dbName, "version", version)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return err
	case <-rts.stopped():
		log.Error("embedded runtime stopped; shutting down")
	case <-ctx.Done():
		log.Info("shutting down", "grace", o.shutdownFor)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.shutdownFor)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("shutdown", "error", err)
	}
	// Background responses have no connection to wait for: stop them and let each
	// store its final state before the database closes.
	if err := h.Shutdown(shutdownCtx); err != nil {
		log.Warn("background responses did not stop in time", "error", err)
	}
	srv.Close()
	if emb := rts.embedded; emb != nil {
		// The runtime stops its runners on the same signal; wait for that so no runner
		// outlives hearth.
		unloadCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		select {
		case <-emb.Stopped():
		case <-unloadCtx.Done():
			_ = emb.UnloadAll(unloadCtx)
		}
	}
	log.Info("stopped")
	return nil
}

// listen opens serve's address, or says what is wrong with it and what to do: one line
// of cause, one of fix.
func listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("--addr %q is not an address: %v\nfix: give HOST:PORT, such as --addr 127.0.0.1:8080 (or HEARTH_ADDR, or addr in the config file)", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--addr %s is in use: another program (another hearth?) listens there\nfix: stop that program, or give hearth serve a free address: --addr HOST:PORT (or HEARTH_ADDR, or addr in the config file)", addr)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("--addr %s: permission denied (ports below 1024 need privileges)\nfix: use a port of 1024 or more, such as --addr 127.0.0.1:8080", addr)
	case err != nil:
		return nil, fmt.Errorf("--addr %s: cannot listen there: %v\nfix: give an address of this machine that is free, such as --addr 127.0.0.1:8080", addr, err)
	}
	return ln, nil
}

// warnClientKey says that serve ignores $HEARTH_API_KEY and the config file's api-key:
// they hold the key the CLI sends as a client, often a user key, and serve once read
// them as its admin keys, so exporting a user key for the CLI and starting serve from
// the same shell made that key an admin. Serve's keys are --admin-key only.
func warnClientKey(log *slog.Logger) {
	if _, ok := os.LookupEnv("HEARTH_API_KEY"); ok {
		log.Warn("HEARTH_API_KEY is set: it is the CLI's client key and hearth serve ignores it; serve's admin keys are --admin-key (HEARTH_ADMIN_KEY)")
	}
	if _, ok := configValues["api-key"]; ok {
		log.Warn("the config file's api-key is the CLI's client key and hearth serve ignores it; serve's admin keys are admin-key")
	}
}

// checkKeys refuses blank keys: `--admin-key " "` (or ",", or HEARTH_ADMIN_KEY=" ") would
// otherwise count as keys for checkExposure while the server, trimming them, required
// none, and a LAN address would be served open.
func checkKeys(keys []string) error {
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			return errors.New("--admin-key (HEARTH_ADMIN_KEY) holds a blank key: give each key as text (comma-separated for several), or leave the setting out")
		}
	}
	return nil
}

// checkExposure refuses to serve a non-loopback address without keys: a LAN would
// otherwise get free use of the machine's models and everyone's stored responses.
func checkExposure(addr string, keys []string, allow bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if len(keys) > 0 || allow {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %s is reachable from other machines: create a key (hearth keys create --name NAME) or set --admin-key (HEARTH_ADMIN_KEY), or pass --insecure-no-auth to serve without keys", addr)
}

// connectExternal connects to an Ollama server the user runs.
func connectExternal(ctx context.Context, raw, source string, log *slog.Logger) (*ollama.Runtime, error) {
	rt, err := ollama.Connect(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rt.WaitReady(readyCtx); err != nil {
		// Serve anyway: /healthz reports the runtime down until it comes up.
		log.Warn("external runtime not reachable yet", "url", rt.URL.String(), "error", err)
	}
	log.Info("using external Ollama runtime", "url", rt.URL.String(), "from", source)
	return rt, nil
}

// startEmbedded starts the runtime inside this process.
func startEmbedded(ctx context.Context, o serveOptions, modelsDir string, log *slog.Logger) (*ollama.Runtime, error) {
	if err := cpubuild.Check(); err != nil {
		return nil, err
	}
	// Which kernels the model runners will run: decided here as each runner decides it
	// (same CPU, same lib/hearth, same environment), so a forced variant this CPU
	// cannot run stops the start instead of every model load.
	kernels := cpubuild.Selected()
	if kernels.Err != nil {
		return nil, kernels.Err
	}
	// The runtime's own output (its log, its request log of hearth's calls, the model
	// loader's and runners' lines) is hearth's debug records: at the default level a
	// request is one line.
	if err := ollama.CaptureOutput(log); err != nil {
		return nil, fmt.Errorf("start embedded runtime: %w", err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rt, err := ollama.StartEmbedded(startCtx, ollama.EmbeddedConfig{ModelsDir: modelsDir, NoGPU: !o.gpu, Log: log})
	if err != nil {
		return nil, fmt.Errorf("start embedded runtime: %w", err)
	}
	log.Info("using embedded Ollama runtime", "listens", "nowhere (in-process only)", "models", rt.ModelsDir)
	log.Info("cpu kernels", "variant", kernels.Chosen.Name, "detail", kernels.Summary())
	for _, why := range kernels.Skipped {
		log.Warn("cpu kernels: runner variant not usable", "why", why)
	}
	logDevices(log, o.gpu, rt.GPUs)
	return rt, nil
}

// logDevices says once where the embedded runtime will run models: on each GPU device its
// backend found, or on the CPU and why.
// devices are those the runtime found as it started.
func logDevices(log *slog.Logger, gpu bool, devices []ollama.Device) {
	backends := ollama.GPUBackends()
	switch {
	case len(backends) == 0:
		log.Info("running models on the CPU: no GPU backend is built beside hearth (make build GPU=cuda or GPU=vulkan)", "lib_dir", ollama.LibDir())
		return
	case !gpu:
		log.Info("running models on the CPU: the GPU is disabled (--gpu=false)", "backends", backends)
		return
	}
	if len(devices) == 0 {
		log.Info("running models on the CPU: the GPU backend found no device", "backends", backends, "why", ollama.NoDeviceReasons(backends))
		return
	}
	for _, d := range devices {
		log.Info("GPU device", "library", d.Library, "id", d.ID, "name", d.Name, "description", d.Description,
			"integrated", d.Integrated, "total_memory", binaryBytes(d.TotalMemory), "free_memory", binaryBytes(d.FreeMemory))
	}
}

// openedCacheCollectors report the engine's cache of opened reasoning blobs.
func openedCacheCollectors() []prometheus.Collector {
	return telemetry.CacheCollectors("opened_reasoning", "sealed reasoning kept opened, by key and blob", func() telemetry.CacheStats {
		st := engine.ReadOpenedCacheStats()
		return telemetry.CacheStats{Entries: st.Entries, Bytes: st.Bytes, Budget: st.Budget, Hits: st.Hits, Misses: st.Misses}
	})
}

// promptCacheCollectors report the Ollama renderer's prompt cache (incremental
// rendering): a hit is a prompt spliced from a kept one, a miss a whole render.
func promptCacheCollectors() []prometheus.Collector {
	return telemetry.CacheCollectors("prompt", "rendered prompts kept for incremental rendering", func() telemetry.CacheStats {
		st := ollama.ReadPromptCacheStats()
		return telemetry.CacheStats{Entries: st.Entries, Bytes: st.Bytes, Budget: st.Budget, Hits: st.Incremental, Misses: st.Full}
	})
}

// modelAliases reads --model-alias settings, in the order given (the first glob that
// matches wins).
func modelAliases(settings []string) (*engine.Aliases, error) {
	list := make([]engine.Alias, 0, len(settings))
	for _, s := range settings {
		a, err := engine.ParseAlias(s)
		if err != nil {
			return nil, fmt.Errorf("--model-alias: %w", err)
		}
		list = append(list, a)
	}
	a, err := engine.NewAliases(list)
	if err != nil {
		return nil, fmt.Errorf("--model-alias: %w", err)
	}
	return a, nil
}
