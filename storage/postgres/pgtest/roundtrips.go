package pgtest

import (
	"context"
	"sync/atomic"

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
	// SQL, when set, is called with each statement sent alone or in a batch (for a
	// test's log of what a response sent).
	SQL func(sql string)
}

// Total is the round trips counted so far, prepares left out.
func (r *RoundTrips) Total() int64 { return r.statements.Load() + r.batches.Load() }

// Prepares is the statements sent alone that were prepared so far (each a round
// trip of its own).
func (r *RoundTrips) Prepares() int64 { return r.prepares.Load() }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.statements.Add(1)
	if r.SQL != nil {
		r.SQL(data.SQL)
	}
	return ctx
}

func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	return ctx
}

func (r *RoundTrips) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if r.SQL != nil {
		r.SQL("(batch) " + data.SQL)
	}
}

func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.prepares.Add(1)
	return ctx
}

func (r *RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
