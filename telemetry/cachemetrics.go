package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"hearth/internal/gencache"
)

// CacheStats is what /metrics reports of one of hearth's in-memory caches: what it
// holds against its bound, and how often it served a lookup.
type CacheStats = gencache.Stats

// CacheCollectors reports a cache as hearth_<name>_cache_entries, _bytes,
// _budget_bytes, _hits_total and _misses_total, read from stats at each scrape. what
// says what the cache holds, for the series' help.
func CacheCollectors(name, what string, stats func() CacheStats) []prometheus.Collector {
	gauge := func(series, help string, v func(CacheStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hearth_" + name + "_cache_" + series, Help: help},
			func() float64 { return v(stats()) })
	}
	counter := func(series, help string, v func(CacheStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hearth_" + name + "_cache_" + series, Help: help},
			func() float64 { return v(stats()) })
	}
	return []prometheus.Collector{
		gauge("entries", "Entries in the "+name+" cache ("+what+").", func(s CacheStats) float64 { return float64(s.Entries) }),
		gauge("bytes", "Bytes the "+name+" cache holds (its keys' or values' text).", func(s CacheStats) float64 { return float64(s.Bytes) }),
		gauge("budget_bytes", "The bound on hearth_"+name+"_cache_bytes.", func(s CacheStats) float64 { return float64(s.Budget) }),
		counter("hits_total", "Lookups the "+name+" cache served.", func(s CacheStats) float64 { return float64(s.Hits) }),
		counter("misses_total", "Lookups the "+name+" cache could not serve.", func(s CacheStats) float64 { return float64(s.Misses) }),
	}
}
