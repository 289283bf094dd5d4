package server

import (
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"hearth/engine/pool"
	"hearth/internal/admission"
)

// metrics are the Prometheus series hearth exports on /metrics. Each Server has its own
// registry, so servers in one process (tests) do not share counters.
//
// Label cardinality stays small on purpose: model names, key names (a team's handful),
// route patterns (not paths), status codes.
type metrics struct {
	reg *prometheus.Registry

	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	responses *prometheus.CounterVec
	rejected  *prometheus.CounterVec
	queueWait *prometheus.HistogramVec
	ttft      *prometheus.HistogramVec
	tps       *prometheus.HistogramVec
	tokensIn  *prometheus.CounterVec
	tokensOut *prometheus.CounterVec
	cached    *prometheus.CounterVec
	// embeddings counts the texts /v1/embeddings embedded.
	embeddings *prometheus.CounterVec

	runtimeUp       prometheus.Gauge
	runtimeRestarts prometheus.Counter
	runtimeErrors   prometheus.Counter
}

// latencyBuckets span a script model's milliseconds to a big model's minutes.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// newMetrics registers hearth's series; label maps a requested model name to its label
// (modelNames.label), also for the admission gauges read at scrape time.
func newMetrics(adm *admission.Controller, label func(string) string) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_http_requests_total",
		Help: "HTTP requests by route pattern, method, status code, model (for /v1/responses) and API key name.",
	}, []string{"route", "method", "code", "model", "key"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_http_request_duration_seconds", Help: "Time from request to the end of the answer (the whole stream for SSE).",
		Buckets: latencyBuckets,
	}, []string{"route"})
	m.responses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_responses_total", Help: "Finished responses by model, final status and API key name.",
	}, []string{"model", "status", "key", "runtime"})
	m.embeddings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_embedding_inputs_total", Help: "Texts embedded through /v1/embeddings (their tokens count in hearth_input_tokens_total).",
	}, []string{"model", "key"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_admission_rejected_total", Help: "Requests refused with 429: queue_full, key_queue_full or rate_limited.",
	}, []string{"model", "reason"})
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_queue_wait_seconds", Help: "Time a generation waited for a slot of its model.", Buckets: latencyBuckets,
	}, []string{"model"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_time_to_first_token_seconds", Help: "Time from the request to the first output (queue wait and prompt processing included).",
		Buckets: latencyBuckets,
	}, []string{"model", "runtime"})
	m.tps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_output_tokens_per_second", Help: "Decoding speed of a response: output tokens after the first, per second.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000, 2000},
	}, []string{"model", "runtime"})
	m.tokensIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_input_tokens_total", Help: "Prompt tokens of finished responses.",
	}, []string{"model", "key", "runtime"})
	m.tokensOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_output_tokens_total", Help: "Generated tokens of finished responses.",
	}, []string{"model", "key", "runtime"})
	m.cached = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_cached_input_tokens_total", Help: "Prompt tokens served from the runtime's KV cache (cache hits), as responses report them: only prefixes their own key or cache group left there.",
	}, []string{"model", "key", "runtime"})
	m.runtimeUp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hearth_runtime_up", Help: "1 when the runtime answered its last health check, else 0.",
	})
	m.runtimeRestarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hearth_runtime_restarts_total", Help: "Times the runtime came back after being down (reconnections).",
	})
	m.runtimeErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hearth_runtime_errors_total", Help: "Responses failed by the runtime (a crashed runner, a lost connection).",
	})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.responses, m.rejected, m.queueWait, m.ttft, m.tps,
		m.tokensIn, m.tokensOut, m.cached, m.embeddings, m.runtimeUp, m.runtimeRestarts, m.runtimeErrors,
		&admissionCollector{adm, label},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	m.runtimeUp.Set(1)
	return m
}

var (
	queueDepthDesc = prometheus.NewDesc("hearth_queue_depth", "Requests waiting for a slot of the model.", []string{"model"}, nil)
	runningDesc    = prometheus.NewDesc("hearth_generations_running", "Generations of the model holding a slot.", []string{"model"}, nil)
	slotsDesc      = prometheus.NewDesc("hearth_generation_slots", "Concurrent generations allowed per model.", nil, nil)
)

// admissionCollector reads queue depth at scrape time, so the numbers are exact, not
// sampled.
type admissionCollector struct {
	c     *admission.Controller
	label func(string) string
}

func (a *admissionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- runningDesc
	ch <- slotsDesc
}

func (a *admissionCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(a.c.Config().Slots))
	// Lanes whose names share a label (made-up names all are "unknown") add up: a
	// series may be sent once per scrape.
	type counts struct{ waiting, running int }
	byLabel := map[string]*counts{}
	var order []string
	for _, l := range a.c.Snapshot() {
		name := a.label(l.Model)
		c := byLabel[name]
		if c == nil {
			c = &counts{}
			byLabel[name] = c
			order = append(order, name)
		}
		c.waiting += l.Waiting
		c.running += l.Running
	}
	for _, name := range order {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(byLabel[name].waiting), name)
		ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(byLabel[name].running), name)
	}
}

func (s *Server) serveMetrics(c *gin.Context) {
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(c.Writer, c.Request)
}

func (m *metrics) request(route, method string, code int, model, key string) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(code), model, key).Inc()
}

var (
	runtimeServingDesc = prometheus.NewDesc("hearth_runtime_serving", "1 while the runtime (of the pool) answers its health checks, else 0.", []string{"runtime"}, nil)
	runtimeRunningDesc = prometheus.NewDesc("hearth_runtime_generations_running", "Generations of the model holding a slot of the runtime.", []string{"model", "runtime"}, nil)
	runtimeQueueDesc   = prometheus.NewDesc("hearth_runtime_queue_depth", "Requests placed on the runtime waiting for a slot of the model.", []string{"model", "runtime"}, nil)
)

// poolCollector reads each runtime's state and load at scrape time.
type poolCollector struct {
	p     *pool.Pool
	c     *admission.Controller
	label func(string) string
}

func (pc *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runtimeServingDesc
	ch <- runtimeRunningDesc
	ch <- runtimeQueueDesc
}

func (pc *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range pc.p.States() {
		up := 0.0
		if st.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(runtimeServingDesc, prometheus.GaugeValue, up, st.Label)
	}
	// Lanes whose names share a label add up, as in admissionCollector.
	type key struct{ model, runtime string }
	running, waiting := map[key]int{}, map[key]int{}
	var order []key
	for _, l := range pc.c.Snapshot() {
		name := pc.label(l.Model)
		for _, rt := range pc.p.Labels() {
			k := key{name, rt}
			if _, ok := running[k]; !ok {
				order = append(order, k)
			}
			running[k] += l.RunningOn[rt]
			waiting[k] += l.WaitingOn[rt]
		}
	}
	for _, k := range order {
		ch <- prometheus.MustNewConstMetric(runtimeRunningDesc, prometheus.GaugeValue, float64(running[k]), k.model, k.runtime)
		ch <- prometheus.MustNewConstMetric(runtimeQueueDesc, prometheus.GaugeValue, float64(waiting[k]), k.model, k.runtime)
	}
}
