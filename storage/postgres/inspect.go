package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"hearth/storage/sqlstore"
)

// Inspection is what `hearth doctor` reports of a PostgreSQL database. Inspect finds it
// without changing the database: it applies no migration, and its write check is
// rolled back.
type Inspection struct {
	Server   string // the server's version (server_version)
	Database string // the database and user connected as
	User     string
	// Schema is the newest schema version applied (0: hearth never started on this
	// database); Known is the newest this build has, Pending the migrations it would
	// apply at the next start.
	Schema  int
	Known   int
	Pending []string
	// ActiveKeys and RevokedKeys count the API keys (schema present only).
	ActiveKeys, RevokedKeys int
	// Latency is the median time of a round trip (SELECT 1) over a few.
	Latency time.Duration
	// WriteErr is why a write and its read-back failed, nil when they worked: a
	// transaction writes a row of hearth's own (or, on a database hearth has not
	// started on, checks it may create tables) and a temporary table, reads the row
	// back, and rolls back.
	WriteErr error
}

// latencyProbes is how many round trips Inspect times.
const latencyProbes = 7

// Inspect connects to the database at url (one connection, closed after) and reports
// it. An error (wrapping storage.ErrUnavailable when the server cannot be reached)
// means it could not connect or read the schema's version.
func Inspect(ctx context.Context, url string) (*Inspection, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("storage: postgres: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("storage: postgres: %w", classify(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var in Inspection
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version'), current_database(), current_user`).
		Scan(&in.Server, &in.Database, &in.User); err != nil {
		return nil, fmt.Errorf("storage: postgres: %w", classify(err))
	}
	ms, err := sqlstore.Postgres.Migrations()
	if err != nil {
		return nil, err
	}
	in.Known = len(ms)
	var hasSchema bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&hasSchema); err != nil {
		return nil, fmt.Errorf("storage: postgres: %w", classify(err))
	}
	if hasSchema {
		if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&in.Schema); err != nil {
			return nil, fmt.Errorf("storage: read schema version: %w", classify(err))
		}
	}
	if in.Schema > 0 {
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE revoked_at IS NULL), count(*) FILTER (WHERE revoked_at IS NOT NULL) FROM api_keys`).
			Scan(&in.ActiveKeys, &in.RevokedKeys); err != nil {
			return nil, fmt.Errorf("storage: count keys: %w", classify(err))
		}
	}
	for _, m := range ms {
		if m.Version > in.Schema {
			in.Pending = append(in.Pending, m.Name)
		}
	}

	times := make([]time.Duration, 0, latencyProbes)
	for range latencyProbes {
		start := time.Now()
		if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
			return nil, fmt.Errorf("storage: postgres: %w", classify(err))
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	in.Latency = times[len(times)/2]

	in.WriteErr = classify(pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if in.Schema > 0 {
			// A row of hearth's own: the user may write where hearth writes.
			var epoch int64
			if err := tx.QueryRow(ctx, `UPDATE chain_epoch SET epoch = epoch RETURNING epoch`).Scan(&epoch); err != nil {
				return fmt.Errorf("write to hearth's tables: %w", err)
			}
		} else {
			var may bool
			if err := tx.QueryRow(ctx, `SELECT has_schema_privilege(current_schema(), 'CREATE')`).Scan(&may); err != nil {
				return err
			}
			if !may {
				return errors.New("the user may not create tables in the schema " +
					"(hearth creates its tables at its first start): grant CREATE on it")
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE hearth_doctor (v text) ON COMMIT DROP`); err != nil {
			return err
		}
		const probe = "hearth doctor"
		var back string
		if err := tx.QueryRow(ctx, `INSERT INTO hearth_doctor (v) VALUES ($1) RETURNING v`, probe).Scan(&back); err != nil {
			return err
		}
		if back != probe {
			return fmt.Errorf("wrote %q, read back %q", probe, back)
		}
		return errRollback
	}))
	if errors.Is(in.WriteErr, errRollback) {
		in.WriteErr = nil
	}
	return &in, nil
}

// errRollback ends Inspect's write check's transaction without committing it.
var errRollback = errors.New("rolled back")
