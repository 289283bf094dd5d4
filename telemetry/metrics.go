// Package telemetry is what hearth reports of itself: the Prometheus series /metrics
// exports, and the model names their labels may take.
package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"net/http"

	"hearth/engine/pool"
	"hearth/internal/admission"
)

// Metrics are the Prometheus series hearth exports on /metrics. Each Server has its own
// registry, so servers in one process (tests) do not share counters.
//
// Label cardinality stays small on purpose: model names, key names (a team's handful),
// route patterns (not paths), status codes.
type Metrics struct {
	Reg *prometheus.Registry

	Requests  *prometheus.CounterVec
	Duration  *prometheus.HistogramVec
	Responses *prometheus.CounterVec
	Rejected  *prometheus.CounterVec
	QueueWait *prometheus.HistogramVec
	TTFT      *prometheus.HistogramVec
	TPS       *prometheus.HistogramVec
	TokensIn  *prometheus.CounterVec
	TokensOut *prometheus.CounterVec
	Cached    *prometheus.CounterVec
	// Embeddings counts the texts /v1/embeddings embedded.
	Embeddings *prometheus.CounterVec

	RuntimeUp       prometheus.Gauge
	RuntimeRestarts prometheus.Counter
	RuntimeErrors   prometheus.Counter
}

// latencyBuckets span a script model's milliseconds to a big model's minutes.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New registers hearth's series; label maps a requested model name to its label
// (ModelNames.Label), also for the admission gauges read at scrape time.
func New(adm *admission.Controller, label func(string) string) *Metrics {
	m := &Metrics{Reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.Reg.MustRegister(c) }
	m.Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_http_requests_total",
		Help: "HTTP requests by route pattern, method, status code, model (for /v1/responses) and API key name.",
	}, []string{"route", "method", "code", "model", "key"})
	m.Duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_http_request_duration_seconds", Help: "Time from request to the end of the answer (the whole stream for SSE).",
		Buckets: latencyBuckets,
	}, []string{"route"})
	m.Responses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_responses_total", Help: "Finished responses by model, final status and API key name.",
	}, []string{"model", "status", "key", "runtime"})
	m.Embeddings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_embedding_inputs_total", Help: "Texts embedded through /v1/embeddings (their tokens count in hearth_input_tokens_total).",
	}, []string{"model", "key"})
	m.Rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_admission_rejected_total", Help: "Requests refused with 429: queue_full, key_queue_full or rate_limited.",
	}, []string{"model", "reason"})
	m.QueueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_queue_wait_seconds", Help: "Time a generation waited for a slot of its model.", Buckets: latencyBuckets,
	}, []string{"model"})
	m.TTFT = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_time_to_first_token_seconds", Help: "Time from the request to the first output (queue wait and prompt processing included).",
		Buckets: latencyBuckets,
	}, []string{"model", "runtime"})
	m.TPS = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hearth_output_tokens_per_second", Help: "Decoding speed of a response: output tokens after the first, per second.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000, 2000},
	}, []string{"model", "runtime"})
	m.TokensIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_input_tokens_total", Help: "Prompt tokens of finished responses.",
	}, []string{"model", "key", "runtime"})
	m.TokensOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_output_tokens_total", Help: "Generated tokens of finished responses.",
	}, []string{"model", "key", "runtime"})
	m.Cached = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_cached_input_tokens_total", Help: "Prompt tokens served from the runtime's KV cache (cache hits), as responses report them: only prefixes their own key or cache group left there.",
	}, []string{"model", "key", "runtime"})
	m.RuntimeUp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hearth_runtime_up", Help: "1 when the runtime answered its last health check, else 0.",
	})
	m.RuntimeRestarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hearth_runtime_restarts_total", Help: "Times the runtime came back after being down (reconnections).",
	})
	m.RuntimeErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hearth_runtime_errors_total", Help: "Responses failed by the runtime (a crashed runner, a lost connection).",
	})
	for _, c := range []prometheus.Collector{m.Requests, m.Duration, m.Responses, m.Rejected, m.QueueWait, m.TTFT, m.TPS,
		m.TokensIn, m.TokensOut, m.Cached, m.Embeddings, m.RuntimeUp, m.RuntimeRestarts, m.RuntimeErrors,
		&admissionCollector{adm, label},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	m.RuntimeUp.Set(1)
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

// Handler serves the series in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Reg, promhttp.HandlerOpts{})
}

// Request counts one HTTP request.
func (m *Metrics) Request(route, method string, code int, model, key string) {
	if route == "" {
		route = "unmatched"
	}
	m.Requests.WithLabelValues(route, method, strconv.Itoa(code), model, key).Inc()
}

var (
	runtimeServingDesc = prometheus.NewDesc("hearth_runtime_serving", "1 while the runtime (of the pool) answers its health checks, else 0.", []string{"runtime"}, nil)
	runtimeRunningDesc = prometheus.NewDesc("hearth_runtime_generations_running", "Generations of the model holding a slot of the runtime.", []string{"model", "runtime"}, nil)
	runtimeQueueDesc   = prometheus.NewDesc("hearth_runtime_queue_depth", "Requests placed on the runtime waiting for a slot of the model.", []string{"model", "runtime"}, nil)
)

// PoolCollector reads each runtime's state and load at scrape time.
type PoolCollector struct {
	Pool      *pool.Pool
	Admission *admission.Controller
	Label     func(string) string
}

func (pc *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runtimeServingDesc
	ch <- runtimeRunningDesc
	ch <- runtimeQueueDesc
}

func (pc *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range pc.Pool.States() {
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
	for _, l := range pc.Admission.Snapshot() {
		name := pc.Label(l.Model)
		for _, rt := range pc.Pool.Labels() {
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
