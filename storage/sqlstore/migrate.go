package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The schemas of both stores, side by side: schema/sqlite and schema/postgres hold
// each dialect's versions (the types differ), so a change to the tables is written and
// reviewed in one place for both.
//
//go:embed schema/sqlite/*.sql schema/postgres/*.sql
var schemas embed.FS

// Migration is one version of a store's schema: a file NNNN_name.sql of its own
// dialect (the schemas differ), embedded so that the binary carries its schema, and
// kept as SQL so that a reviewer reads the schema as SQL.
type Migration struct {
	Version int
	Name    string
	body    *Stmt
}

// Migrations are the dialect's schema versions (schema/<dialect>), in order.
func (d *Dialect) Migrations() ([]Migration, error) {
	sub, err := fs.Sub(schemas, "schema/"+d.name)
	if err != nil {
		return nil, err
	}
	return LoadMigrations(sub)
}

// LoadMigrations reads the migrations NNNN_name.sql at the top of files, in order. It insists on
// versions 1, 2, 3, ... without gaps or duplicates: a gap would mean a file was lost in
// a merge, and applying the rest would build a schema nobody tested.
func LoadMigrations(files fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("storage: migration %q: want NNNN_name.sql", name)
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), body: raw(string(body))})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("storage: migration %s: expected version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// Migrator is where a store migrates: Q runs statements on one connection (which the
// store may hold a lock on, so that processes starting at once migrate in turn), and
// InTx runs fn in a transaction on it.
type Migrator interface {
	Querier
	InTx(ctx context.Context, fn func(Querier) error) error
}

var (
	// sqlMigrationsTable records the versions applied, in each store's types.
	sqlMigrationsTable = Dialects(`CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer NOT NULL PRIMARY KEY,
	name       text    NOT NULL,
	applied_at bigint  NOT NULL
)`)
	sqlSchemaVersion   = SQL(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`)
	sqlRecordMigration = SQL(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`)
)

// Migrate applies every migration of the dialect (Dialect.Migrations) the database has
// not recorded yet, each in its own transaction together with its schema_migrations row,
// so a crash mid-way leaves the database at a recorded version and the next start
// resumes from there.
func Migrate(ctx context.Context, m Migrator, d *Dialect) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	if _, err := m.Exec(ctx, sqlMigrationsTable); err != nil {
		return fmt.Errorf("storage: create schema_migrations: %w", err)
	}
	var current int
	if err := m.QueryRow(ctx, sqlSchemaVersion).Scan(&current); err != nil {
		return fmt.Errorf("storage: read schema version: %w", err)
	}
	// A newer hearth has migrated this database; running old code against a schema it
	// does not know could corrupt rows it misunderstands.
	if current > len(ms) {
		return fmt.Errorf("storage: database schema version %d is newer than this build knows (%d)", current, len(ms))
	}
	for _, mg := range ms[current:] {
		if err := Apply(ctx, m, mg); err != nil {
			return err
		}
	}
	return nil
}

// Apply applies one migration and records it, in one transaction.
func Apply(ctx context.Context, m Migrator, mg Migration) error {
	err := m.InTx(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, mg.body); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sqlRecordMigration, mg.Version, mg.Name, time.Now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: migration %s: %w", mg.Name, err)
	}
	return nil
}
