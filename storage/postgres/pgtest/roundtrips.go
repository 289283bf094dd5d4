package pgtest

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// RoundTrips counts the round trips a store makes to PostgreSQL, as a pgx tracer
// (postgres.Options.Tracer): each statement sent alone (Exec, Query, QueryRow, a
// transaction's begin and commit among them) is one, and so is each batch, however
// many statements it pipelines. Statements are counted as sent, whatever their
// answer. A connection's first use of a statement also prepares it, one more round
// trip, paid once per connection rather than per response: Prepares counts those of
// statements sent alone, and a batch's are not seen at all (pgx prepares them in a
// pipeline of their own, without its tracer), so a test counting exactly runs its
// statements once first.
type RoundTrips struct {
	statements, batches, prepares atomic.Int64
	// The time from sending a round trip to its last answer, in ns: of those that
	// commit a transaction (a batch with its commit, a commit sent alone), which on a
	// durable cluster wait for the WAL flush, and of the others.
	commitNanos, otherNanos atomic.Int64
	// SQL, when set, is called with each statement sent alone or in a batch (for a
	// test's log of what a response sent).
	SQL func(sql string)
}

// Total is the round trips counted so far, prepares left out.
func (r *RoundTrips) Total() int64 { return r.statements.Load() + r.batches.Load() }

// Prepares is the statements sent alone that were prepared so far (each a round
// trip of its own).
func (r *RoundTrips) Prepares() int64 { return r.prepares.Load() }

// Waited is the time spent in the round trips counted so far, prepares left out:
// those that commit a transaction, and the others. It is wall time on the client's
// side: the network, both sides' scheduling, the server's work and, for a commit on
// a durable cluster, its WAL flush.
func (r *RoundTrips) Waited() (commits, others time.Duration) {
	return time.Duration(r.commitNanos.Load()), time.Duration(r.otherNanos.Load())
}

// trip is one round trip being timed, in its tracer context.
type trip struct {
	start  time.Time
	commit bool
}

type tripKey struct{}

func (r *RoundTrips) begin(ctx context.Context, commit bool) context.Context {
	return context.WithValue(ctx, tripKey{}, &trip{start: time.Now(), commit: commit})
}

func (r *RoundTrips) end(ctx context.Context) {
	t, ok := ctx.Value(tripKey{}).(*trip)
	if !ok {
		return
	}
	if d := time.Since(t.start).Nanoseconds(); t.commit {
		r.commitNanos.Add(d)
	} else {
		r.otherNanos.Add(d)
	}
}

// isCommit reports whether sql commits the transaction it is sent in.
func isCommit(sql string) bool { return strings.EqualFold(strings.TrimSpace(sql), "commit") }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.statements.Add(1)
	if r.SQL != nil {
		r.SQL(data.SQL)
	}
	return r.begin(ctx, isCommit(data.SQL))
}

func (r *RoundTrips) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	r.end(ctx)
}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	return r.begin(ctx, false)
}

func (r *RoundTrips) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if r.SQL != nil {
		r.SQL("(batch) " + data.SQL)
	}
	if t, ok := ctx.Value(tripKey{}).(*trip); ok && isCommit(data.SQL) {
		t.commit = true
	}
}

func (r *RoundTrips) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	r.end(ctx)
}

func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.prepares.Add(1)
	return ctx
}

func (r *RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
