package server

import (
	"context"
	"time"

	"hearth"
	"hearth/respond"
	"hearth/vectorstores"
)

// The core's parts that the server gives it (respond.Config) besides admission: input
// files, and the metrics of the responses it runs.

// coreFiles reads the files of a request's items (inputfiles.go).
type coreFiles struct{ s *Server }

func (f coreFiles) ResolveFiles(ctx context.Context, owner string, items []hearth.Item, path string) error {
	return f.s.vectorStores.ResolveFiles(ctx, owner, items, path)
}

func (coreFiles) TooLong(err error, input []hearth.Item) error {
	return vectorstores.FileTooLong(err, input)
}

// coreMetrics counts the core's responses in /metrics and the console's live view.
type coreMetrics struct{ s *Server }

func (m coreMetrics) FirstToken(model, runtime string, ttft time.Duration) {
	label := m.s.models.Label(model)
	m.s.metrics.TTFT.WithLabelValues(label, runtime).Observe(ttft.Seconds())
	m.s.recent.FirstToken(label, ttft)
}

func (m coreMetrics) Finished(model, status, key, runtime string, u *hearth.Usage, tokensPerSecond float64) {
	mt, label := m.s.metrics, m.s.models.Label(model)
	mt.Responses.WithLabelValues(label, status, key, runtime).Inc()
	if u == nil {
		return
	}
	mt.TokensIn.WithLabelValues(label, key, runtime).Add(float64(u.InputTokens))
	mt.TokensOut.WithLabelValues(label, key, runtime).Add(float64(u.OutputTokens))
	mt.Cached.WithLabelValues(label, key, runtime).Add(float64(u.InputTokensDetails.CachedTokens))
	if tokensPerSecond > 0 {
		mt.TPS.WithLabelValues(label, runtime).Observe(tokensPerSecond)
		m.s.recent.Speed(label, tokensPerSecond)
	}
}

func (m coreMetrics) RuntimeFailed(msg string) { m.s.health.Failed(msg) }

// DefaultJournalRetention is how long the journal of a finished response is kept.
const DefaultJournalRetention = respond.DefaultJournalRetention

// DefaultReplicaLease is how long a replica's lease lasts without renewal.
const DefaultReplicaLease = respond.DefaultReplicaLease

// PruneJournals deletes the journals of responses that finished longer than retention
// ago, now and every hour until ctx ends (respond.Service.PruneJournals).
func (s *Server) PruneJournals(ctx context.Context, retention time.Duration) {
	s.core.PruneJournals(ctx, retention)
}

// KeepLeases holds this process's lease in the store while ctx lasts and fails the
// in-flight responses of processes whose lease ran out (respond.Service.KeepLeases).
func (s *Server) KeepLeases(ctx context.Context, ttl time.Duration) { s.core.KeepLeases(ctx, ttl) }

// Shutdown stops the background responses still running and waits until each has
// stored its final state, or ctx ends; vector store files in hand stay in_progress
// for the next start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.vectorStores.Close() // the files in hand stay in_progress for the next start
	return s.core.Shutdown(ctx)
}
