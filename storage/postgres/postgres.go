// Package postgres is hearth's store on PostgreSQL: storage.Store on one database that
// several hearth processes (replicas) share, and the only package that imports the
// PostgreSQL driver (pgx). It keeps the same records as storage/sqlite, with the same
// behaviour (the conformance suite storage/storetest checks both), in PostgreSQL's
// types; what differs is how writers are kept apart, since they are not one process:
// rows are locked where SQLite's single writer serialised (FOR UPDATE, FOR SHARE), and
// the count of chain changes (ChainEpoch) lives in the database, where every replica
// moves and reads it.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// DB is a hearth database on PostgreSQL. It is safe for concurrent use.
type DB struct {
	// The records both stores keep alike, written once (storage/sqlstore).
	sqlstore.Shared

	pool    conns // every error through classify (unavailable.go)
	replica string
	// asyncCreate: the creation of a response that is not in the background commits
	// without waiting for the WAL flush (CreateResponse says why that keeps what is
	// stored); off when the URL sets synchronous_commit, which then rules every commit.
	asyncCreate bool
	// unknownEpoch numbers the ChainEpoch answers given while the database could not
	// be read (see ChainEpoch).
	unknownEpoch atomic.Uint64
	logger       *slog.Logger

	// The changes every replica commits, as LISTEN hears them (changes.go): on a
	// connection of its own, made from connConfig at the first Watch; closing ends
	// it when the store closes.
	connConfig *pgx.ConnConfig
	changes    storage.Feed
	listenOnce sync.Once
	listening  sync.WaitGroup
	// listenFailing is set while the listening connection is down (logged once).
	listenFailing atomic.Bool
	closing       context.Context
	close         context.CancelFunc
}

var _ storage.Store = (*DB)(nil)

// Options are what Open takes beside the URL.
type Options struct {
	// Replica names this hearth process among those sharing the database; responses
	// it creates carry the name, and RecoverInFlight fails only its own. It must be
	// stable across restarts of one replica and differ between replicas. Empty: the
	// host name.
	Replica string
	// Log takes what the store's own goroutines meet (the connection on which it
	// hears other replicas' changes breaking); nil: slog's default.
	Log *slog.Logger
	// Tracer sees every statement the store's pool sends (pgx's tracer; one that also
	// implements pgx.BatchTracer or pgx.PrepareTracer sees those too), not the
	// listening connection's. The tests count round trips with one
	// (pgtest.RoundTrips).
	Tracer pgx.QueryTracer
}

// Open connects to the PostgreSQL database at url (postgres://... or
// postgresql://..., or key=value settings; PG* environment variables fill in what it
// leaves out) and brings the schema up to date.
func Open(ctx context.Context, url string) (*DB, error) {
	return OpenWith(ctx, url, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, url string, opt Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("storage: postgres: %w", err)
	}
	// Every query here finds rows by keys through indexes, which a generic plan does as
	// well as a custom one; PostgreSQL's default would plan some of them again on every
	// execution (an array parameter made LookupItems spend 4x its run time planning).
	// A URL that sets plan_cache_mode keeps its own.
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	_, syncSet := cfg.ConnConfig.RuntimeParams["synchronous_commit"]
	listenConfig := cfg.ConnConfig.Copy()
	if opt.Tracer != nil {
		cfg.ConnConfig.Tracer = opt.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("storage: postgres: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	replica := opt.Replica
	if replica == "" {
		if replica, err = os.Hostname(); err != nil || replica == "" {
			replica = "hearth"
		}
	}
	logger := opt.Log
	if logger == nil {
		logger = slog.Default()
	}
	closing, closeFn := context.WithCancel(context.Background())
	db := &DB{pool: conns{pool}, replica: replica, asyncCreate: !syncSet, logger: logger,
		connConfig: listenConfig, closing: closing, close: closeFn}
	db.Shared = sqlstore.New(backend{db}, sqlstore.Postgres)
	return db, nil
}

// Close closes the connections. In-flight rows stay as they are.
func (db *DB) Close() error {
	db.close()
	db.listening.Wait()
	db.pool.Close()
	return nil
}

// Ping checks that the database answers, for /healthz.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	return nil
}

// ChainEpoch reads the count of committed changes that can alter a settled chain
// (responses deleted, cancelled, recovered), which every replica's writes move in the
// same transaction as the change. It costs one round trip. When the database cannot
// be read it answers a number it never answered before (the top bit set), so that a
// caller keeping chains by epoch reloads them rather than trust one it cannot check.
func (db *DB) ChainEpoch() uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int64
	if err := db.pool.QueryRow(ctx, sqlChainEpoch).Scan(&n); err != nil {
		return 1<<63 | db.unknownEpoch.Add(1)
	}
	return uint64(n) &^ (1 << 63)
}

const sqlChainEpoch = `SELECT epoch FROM chain_epoch`

// chainsChanged moves ChainEpoch on, inside the transaction of the change.
func chainsChanged(ctx context.Context, tx dbtx) error {
	return queue(ctx, tx, `UPDATE chain_epoch SET epoch = epoch + 1`)
}

// chainLock is the advisory lock that keeps checkpoint writes and chain changes apart:
// a checkpoint is written from a walk of its chain, and a change above it (a cancel, a
// deletion, a parent completing) drops the checkpoints below. A change takes the lock
// exclusively, a checkpoint write shared, so that a walk never reads the state just
// before a change whose drop of checkpoints it would then miss. Both are rare (a
// checkpoint every CheckpointInterval links).
const chainLock = 0x6865617274680001 // "hearth" and 1

func lockChainsExclusive(ctx context.Context, tx dbtx) error {
	return queue(ctx, tx, `SELECT pg_advisory_xact_lock($1)`, int64(chainLock))
}

func lockChainsShared(ctx context.Context, tx dbtx) error {
	return queue(ctx, tx, `SELECT pg_advisory_xact_lock_shared($1)`, int64(chainLock))
}

// write runs fn in a transaction. fn gets ctx without its cancellation: a transaction,
// once begun, runs to its end, as in the SQLite store, so a client going away never
// leaves a response's final state half-decided.
func (db *DB) write(ctx context.Context, fn func(context.Context, pgx.Tx) error) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	defer tx.Rollback(ctx) // no-op after Commit
	if err := fn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// uniqueViolation reports whether err is PostgreSQL's unique_violation (23505).
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// notFound turns pgx's no-rows into e.
func notFound(err, e error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return e
	}
	return err
}
