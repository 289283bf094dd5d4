package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"hearth/storage/sqlstore"
)

// A response's writes are a dozen statements. Sent one by one, each costs a round
// trip to the server (the network's latency, and both sides' scheduling on a busy
// host), which is most of what a write costs on PostgreSQL; the server's own work is
// a fraction. A pipe sends them pipelined (pgx.Batch): a statement whose answer
// nothing reads before the commit waits in a queue, and the queue goes to the server
// in one round trip when Go needs an answer, or with the commit. A write whose
// checks fail on the server (an error aborts the transaction there, and the commit
// queued after it does not happen) is one round trip: a new response's. A write that
// reads a check in Go (QueueRow: a row's lock and status) is two: its statements with
// the begin, then the commit once the check passed.
//
// The one thing to know when writing for a pipe: a statement queued after a check
// (QueueRow) runs on the server before the check's answer is read in Go.
// A failed check rolls the transaction back, so what ran after it is never seen; but
// it ran, and a statement whose running alone would be wrong (rather than rolled
// back) must wait for the check with Send.

// dbtx is what the store's statements run on: a transaction, or a pipe.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// queue runs a write whose answer nothing reads: a pipe queues it for its next round
// trip (its error then ends the transaction there), a transaction runs it at once.
func queue(ctx context.Context, tx dbtx, sql string, args ...any) error {
	if p, ok := tx.(*pipe); ok {
		p.batch.Queue(sql, args...)
		return nil
	}
	_, err := tx.Exec(ctx, sql, args...)
	return err
}

// pipe is a write transaction on one connection whose statements are pipelined (see
// above). Exec and QueryRow's Scan send what is queued with their own statement at
// its end, and Query sends it before its own, so code written for a pgx.Tx runs on a
// pipe unchanged, at most one round trip a statement.
type pipe struct {
	conn  *pgxpool.Conn
	batch *pgx.Batch
	// checks is set while the queue holds a statement whose answer a callback checks:
	// the commit must not go with it.
	checks bool
	// tx is the pipe as the shared layer's transaction, made with it (not per call).
	tx pgTx
}

// writePipelined runs fn in a transaction on a pipe: the begin goes with fn's first
// round trip, the commit with its last when no check is left to read, and one round
// trip of its own otherwise. As write, fn gets ctx without its cancellation.
func (db *DB) writePipelined(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release() // a connection left in a transaction is closed, not reused
	ctx = context.WithoutCancel(ctx)
	p := &pipe{conn: c, batch: &pgx.Batch{}}
	p.tx = pgTx{pgConn{p}}
	p.batch.Queue("begin")
	err = fn(ctx, &p.tx)
	if err == nil && p.checks {
		err = p.Send(ctx)
	}
	if err == nil {
		p.batch.Queue("commit").Exec(func(tag pgconn.CommandTag) error {
			if tag.String() == "ROLLBACK" { // the server had aborted it
				return pgx.ErrTxCommitRollback
			}
			return nil
		})
		err = p.Send(ctx)
	}
	if err != nil && c.Conn().PgConn().TxStatus() != 'I' {
		c.Exec(ctx, "rollback")
	}
	return err
}

// QueueRow queues a statement that answers one row, which check reads when the
// queue is sent (pgx.ErrNoRows for none); check's error ends the transaction.
func (p *pipe) QueueRow(check func(pgx.Row) error, sql string, args ...any) {
	p.batch.Queue(sql, args...).QueryRow(func(r pgx.Row) error { return check(row{r}) })
	p.checks = true
}

// Send sends what is queued, in one round trip, and runs the checks.
func (p *pipe) Send(ctx context.Context) error {
	if p.batch.Len() == 0 {
		return nil
	}
	b := p.batch
	p.batch, p.checks = &pgx.Batch{}, false
	return classify(p.conn.SendBatch(ctx, b).Close())
}

func (p *pipe) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	p.batch.Queue(sql, args...).Exec(func(t pgconn.CommandTag) error { tag = t; return nil })
	return tag, p.Send(ctx)
}

func (p *pipe) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := p.Send(ctx); err != nil {
		return nil, err
	}
	r, err := p.conn.Query(ctx, sql, args...)
	if err != nil {
		return r, classify(err)
	}
	return rows{r}, nil
}

// QueryRow's statement is sent when its row is scanned, at the end of what is queued.
func (p *pipe) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return pipeRow{p: p, ctx: ctx, sql: sql, args: args}
}

type pipeRow struct {
	p    *pipe
	ctx  context.Context
	sql  string
	args []any
}

// Scan answers a check's error queued before the row's statement, if one failed, or
// the row's (pgx.ErrNoRows for none).
func (r pipeRow) Scan(dest ...any) error {
	r.p.batch.Queue(r.sql, r.args...).QueryRow(func(row pgx.Row) error { return row.Scan(dest...) })
	return r.p.Send(r.ctx)
}

// queueRow runs a read of one row whose answer check takes: a pipe queues it, with
// check run when the queue is sent; a transaction runs it and check at once.
func queueRow(ctx context.Context, tx dbtx, check func(pgx.Row) error, sql string, args ...any) error {
	if p, ok := tx.(*pipe); ok {
		p.QueueRow(check, sql, args...)
		return nil
	}
	return check(tx.QueryRow(ctx, sql, args...))
}

// send sends what a pipe has queued, so that the answers its checks read are in;
// on a transaction everything ran already.
func send(ctx context.Context, tx dbtx) error {
	if p, ok := tx.(*pipe); ok {
		return p.Send(ctx)
	}
	return nil
}
