// Package wire builds hearth from its parts: the runtimes' pool as placement sees it,
// admission, the engine's defaults, the metrics, the files and vector stores service,
// the application core (respond) and the HTTP server over them. `hearth serve`, the
// bench harness and server's end-to-end tests all start hearth through New, so that
// the tests run the parts as the command wires them. What the caller chooses (the
// runtimes, the store, the hosted kinds, the flags) comes in Config; the background
// work (journal pruning, leases, runtime checks, ingestion) is started by the caller on
// the parts New returns.
package wire

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/admission"
	"hearth/internal/seal"
	"hearth/internal/tracing"
	"hearth/internal/urlpolicy"
	"hearth/respond"
	"hearth/server"
	"hearth/server/console"
	"hearth/telemetry"
	"hearth/vectorstores"
)

// Config is what hearth is built from. The HTTP settings (Database, APIKeys,
// Heartbeat, MaxBodyBytes, Limits, the WebSocket and body bounds, AllowOrigins,
// AllowHosts, TrustedProxies, BodyReadTimeout, WriteTimeout, Logger) mean what
// server.Config's fields of the same names mean.
type Config struct {
	Runtime server.Runtime
	// Engine runs responses; it must run over Runtime's Seam, so that each response
	// runs on the runtime it is placed on. nil: New builds one.
	Engine *engine.Engine
	// Collectors are more Prometheus series for /metrics (the MCP servers' calls).
	Collectors []prometheus.Collector
	// Database stores responses; nil means nothing is stored.
	Database server.Store
	// Admission bounds concurrent generations per model, their queue and each key's
	// rate. Admission.Slots zero means 1 (cmd/hearth passes the runtime's parallel
	// slots, ollama.Runtime.Slots); MaxQueue zero means DefaultMaxQueue.
	Admission admission.Config
	// RandomPlacement sends every response to a runtime drawn at random among those
	// that have its model, ignoring where its chain lives and how loaded each is. It
	// exists for `hearth bench pool`, to measure what placement by affinity is worth;
	// no serving setup sets it.
	RandomPlacement bool
	// FileURLs are the URLs an input_file's file_url may name (--file-allow-url); nil
	// or empty refuses every file_url.
	FileURLs *urlpolicy.Policy
	// Seal is the key of encrypted_content blobs (encrypted reasoning, compaction
	// items); a server keeps it in its data directory (seal.LoadOrCreate) so blobs
	// clients hold outlive restarts. nil keeps the engine's key, which it makes fresh.
	Seal *seal.Key
	// EmbeddingModel is the embedding model of a vector store created without one
	// (--embedding-model); "" picks the only embedding model the runtimes serve.
	EmbeddingModel string
	// IngestWorkers is how many vector store files are read and embedded at once;
	// zero means vectorstores.DefaultIngestWorkers. IngestQueue bounds the files
	// waiting; zero means vectorstores.DefaultIngestQueue.
	IngestWorkers, IngestQueue int
	// VectorIndexMemory bounds the memory of vector stores' search indexes kept
	// between searches (--vector-index-memory); zero means
	// vectorstores.DefaultIndexMemory.
	VectorIndexMemory int64
	// LogContent logs each response's input and output text. Off by default: prompts
	// are the team's business, not the log's.
	LogContent bool
	// Tracing exports OpenTelemetry spans of each request (--otlp-endpoint); nil:
	// tracing is off.
	Tracing *tracing.Provider

	APIKeys                                       []string
	Heartbeat                                     time.Duration
	MaxBodyBytes                                  int64
	Limits                                        respond.Limits
	WebSocketLifetime                             time.Duration
	WebSocketQueueBytes, WebSocketQueueBytesTotal int64
	RequestBytesTotal                             int64
	AllowOrigins, AllowHosts, TrustedProxies      []string
	BodyReadTimeout, WriteTimeout                 time.Duration
	Logger                                        *slog.Logger
}

// DefaultMaxQueue bounds how many requests wait per model (Config.Admission.MaxQueue):
// a team's burst, not a backlog that takes an hour to drain.
const DefaultMaxQueue = 128

// Hearth is hearth built: the HTTP server (an http.Handler) and the parts whose
// background work the caller runs.
type Hearth struct {
	*server.Server
	// Core makes responses: PruneJournals and KeepLeases run for as long as hearth
	// serves.
	Core *respond.Service
	// VectorStores keeps files and vector stores: ResumeIngestion at start, Sweep while
	// serving; it is the file_search kind's backend.
	VectorStores *vectorstores.Service
	// Health checks the runtimes (Supervise).
	Health *telemetry.RuntimeHealth
}

// New builds hearth from cfg.
func New(cfg Config) *Hearth {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p, ok := cfg.Runtime.(*pool.Pool)
	if !ok {
		p, _ = pool.New([]pool.Runtime{cfg.Runtime}, log)
	}
	adm := cfg.Admission
	if adm.Slots == 0 {
		adm.Slots = 1
	}
	if adm.MaxQueue == 0 {
		adm.MaxQueue = DefaultMaxQueue
	}
	control := admission.New(adm)
	// A runtime that went down leaves its queue to the others.
	p.OnDown(func(label string) { control.Move(label, p.Candidates) })
	models := telemetry.NewModelNames(func(ctx context.Context) ([]string, error) {
		list, err := cfg.Runtime.Models(ctx)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(list))
		for i, m := range list {
			names[i] = m.Name
		}
		return names, nil
	})
	metrics := telemetry.New(control, models.Label)
	health := telemetry.NewRuntimeHealth(p, metrics, log)
	var parents respond.ParentRuntimes
	if cfg.Database != nil {
		parents = cfg.Database
	}
	admissions := respond.NewAdmissions(respond.AdmissionsConfig{Pool: p, Control: control, Random: cfg.RandomPlacement,
		Parents: parents, Metrics: metrics, ModelName: models.Label, Logger: log})
	limits := cfg.Limits.WithDefaults()
	maxBody := cmp.Or(cfg.MaxBodyBytes, server.DefaultMaxBodyBytes)
	vs := vectorstores.New(vectorstores.Config{Store: cfg.Database, Runtime: p, Admit: admissions.Ingestion,
		EmbeddingModel: cfg.EmbeddingModel, IngestWorkers: cfg.IngestWorkers, IngestQueue: cfg.IngestQueue, IndexMemory: cfg.VectorIndexMemory,
		MaxFileBytes: limits.MaxFileBytes, MaxImageBytes: limits.MaxImageBytes, RequestFileBytes: requestFileBytes(limits.MaxFileBytes, maxBody),
		FileURLs: cfg.FileURLs, Logger: log})
	metrics.Reg.MustRegister(&telemetry.PoolCollector{Pool: p, Admission: control, Label: models.Label})
	metrics.Reg.MustRegister(telemetry.CacheCollectors("vector_index", "vector stores' chunks and vectors kept between searches, by store and chunks version", vs.IndexStats)...)
	for _, c := range cfg.Collectors {
		metrics.Reg.MustRegister(c)
	}
	eng := cfg.Engine
	if eng == nil {
		eng = engine.New(p, engine.DefaultFormats(), log)
	}
	if cfg.Seal != nil {
		eng.Seal = cfg.Seal
	}
	if eng.KVSlots == nil {
		// Admission's slots per runtime stand for the runtime's parallel slots, each
		// holding a sequence of its own in the KV cache (cached_tokens).
		eng.KVSlots = control.Slots
	}
	recent := console.NewRecent()
	var store respond.Store
	if cfg.Database != nil {
		store = cfg.Database
	}
	core := respond.New(respond.Config{Engine: eng, Store: store, Admitter: admissions, Files: vs,
		Metrics: responseMetrics{metrics: metrics, label: models.Label, recent: recent, health: health},
		Logger:  log, LogContent: cfg.LogContent})
	for _, c := range core.CacheStats() {
		metrics.Reg.MustRegister(telemetry.CacheCollectors(c.Name, c.What, c.Stats)...)
	}
	srv := server.New(server.Config{
		Runtime: cfg.Runtime, Pool: p, Engine: eng, Core: core, VectorStores: vs, Admissions: admissions,
		Metrics: metrics, Models: models, Health: health, Recent: recent, Database: cfg.Database,
		APIKeys: cfg.APIKeys, Heartbeat: cfg.Heartbeat, MaxBodyBytes: cfg.MaxBodyBytes, Limits: cfg.Limits,
		WebSocketLifetime: cfg.WebSocketLifetime, WebSocketQueueBytes: cfg.WebSocketQueueBytes,
		WebSocketQueueBytesTotal: cfg.WebSocketQueueBytesTotal, RequestBytesTotal: cfg.RequestBytesTotal,
		AllowOrigins: cfg.AllowOrigins, AllowHosts: cfg.AllowHosts, TrustedProxies: cfg.TrustedProxies,
		BodyReadTimeout: cfg.BodyReadTimeout, WriteTimeout: cfg.WriteTimeout, Logger: log,
		Tracing: cfg.Tracing,
	})
	return &Hearth{Server: srv, Core: core, VectorStores: vs, Health: health}
}

// Shutdown stops the background responses still running and waits until each has
// stored its final state, or ctx ends; vector store files in hand stay in_progress
// for the next start.
func (h *Hearth) Shutdown(ctx context.Context) error {
	h.VectorStores.Close()
	return h.Core.Shutdown(ctx)
}

// requestFileBytes bounds the bytes of all the files one request reads: a request
// body's bound, or one file's when that is larger (-1: no bound).
func requestFileBytes(maxFile, maxBody int64) int64 {
	if maxFile < 0 {
		return -1
	}
	return max(maxBody, maxFile)
}

// responseMetrics counts the core's responses (respond.Metrics) in /metrics and the
// console's live view, and tells the runtimes' health of a failed generation.
type responseMetrics struct {
	metrics *telemetry.Metrics
	label   func(model string) string
	recent  *console.Recent
	health  *telemetry.RuntimeHealth
}

func (m responseMetrics) FirstToken(model, runtime string, ttft time.Duration) {
	label := m.label(model)
	m.metrics.TTFT.WithLabelValues(label, runtime).Observe(ttft.Seconds())
	m.recent.FirstToken(label, ttft)
}

func (m responseMetrics) Finished(model, status, key, runtime string, u *hearth.Usage, tokensPerSecond float64) {
	mt, label := m.metrics, m.label(model)
	mt.Responses.WithLabelValues(label, status, key, runtime).Inc()
	if u == nil {
		return
	}
	mt.TokensIn.WithLabelValues(label, key, runtime).Add(float64(u.InputTokens))
	mt.TokensOut.WithLabelValues(label, key, runtime).Add(float64(u.OutputTokens))
	mt.Cached.WithLabelValues(label, key, runtime).Add(float64(u.InputTokensDetails.CachedTokens))
	if tokensPerSecond > 0 {
		mt.TPS.WithLabelValues(label, runtime).Observe(tokensPerSecond)
		m.recent.Speed(label, tokensPerSecond)
	}
}

func (m responseMetrics) RuntimeFailed(msg string) { m.health.Failed(msg) }
