// Package sqlstore is the SQL that hearth's two stores share, written once: the
// records and their statements (files, vector stores, keys, conversations, ...) over
// a small dialect that each store supplies. storage/sqlite and storage/postgres keep
// only what truly differs: how a write transaction is run (SQLite's single writer,
// PostgreSQL's pipelines and row locks), how a change is told to the watchers
// (in-process after the commit, or NOTIFY inside it), the driver's errors, their
// migrations and what only one of them has (integrity checks, leases, secrets).
//
// It imports no driver: a store hands it a Backend whose queriers run statements on
// its own connections. A statement is declared once, at package initialisation, with
// SQLite's placeholders (? or ?N); SQL computes the PostgreSQL form ($N) then, so
// that no call builds or rewrites SQL.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"hearth/storage"
)

// Stmt is one statement in both dialects' text.
type Stmt struct {
	lite, pg string
	// index numbers the statements a store may keep prepared (Prepared), from 0; -1
	// for the others.
	index int
}

// prepared are the statements declared Prepared, by index.
var prepared []*Stmt

// Prepared marks s as one a store keeps prepared on its connections, where preparing
// saves the parse of each call (SQLite, in-process: the parse is most of a short
// statement's cost; PostgreSQL caches statements per connection by itself). For the
// hot paths; called where s is declared.
func (s *Stmt) Prepared() *Stmt {
	s.index = len(prepared)
	prepared = append(prepared, s)
	return s
}

// Index is s's number among PreparedStatements, or -1.
func (s *Stmt) Index() int { return s.index }

// PreparedStatements are the statements declared Prepared, by Index.
func PreparedStatements() []*Stmt { return prepared }

// SQL declares a statement written with SQLite's placeholders (? or ?N, not mixed),
// which PostgreSQL's form numbers ($N). Call it where the statement is declared (a
// package variable), never per call.
func SQL(text string) *Stmt { return &Stmt{lite: text, pg: numbered(text), index: -1} }

// Dialects declares a statement whose text differs between the stores beyond
// placeholders: lite in SQLite's, pg in PostgreSQL's.
func Dialects(lite, pg string) *Stmt { return &Stmt{lite: lite, pg: pg, index: -1} }

// ForUpdate is s locking the rows it reads until the transaction ends, where the
// store has row locks (PostgreSQL's FOR UPDATE); SQLite's single writer already keeps
// every other write out. Declared once, as SQL.
func (s *Stmt) ForUpdate() *Stmt { return &Stmt{lite: s.lite, pg: s.pg + ` FOR UPDATE`, index: -1} }

// SQLite is the statement's text for SQLite.
func (s *Stmt) SQLite() string { return s.lite }

// Postgres is the statement's text for PostgreSQL.
func (s *Stmt) Postgres() string { return s.pg }

// numbered rewrites SQLite's placeholders as PostgreSQL's: ?N as $N, and each bare ?
// as the next number. Quoted strings and identifiers are left as they are.
func numbered(text string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '\'', '"':
			j := strings.IndexByte(text[i+1:], c)
			if j < 0 {
				b.WriteString(text[i:])
				return b.String()
			}
			b.WriteString(text[i : i+j+2])
			i += j + 1
		case '?':
			j := i + 1
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + text[i+1:j])
				i = j - 1
			} else {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ErrNoRows is what a Row's Scan answers for a query that found no row, in either
// store: database/sql's, which pgx's ErrNoRows wraps (errors.Is matches both).
var ErrNoRows = sql.ErrNoRows

// Row is one row of a query's answer.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a query's answer, read row by row; pgx.Rows and (through a one-method
// adapter) *sql.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements: a store's read pool, a transaction. Its errors have been
// through the store's own classification (storage.ErrUnavailable, ErrFull,
// ErrCorrupt), and no row is ErrNoRows.
type Querier interface {
	// Exec runs s and answers how many rows it changed.
	Exec(ctx context.Context, s *Stmt, args ...any) (int64, error)
	Query(ctx context.Context, s *Stmt, args ...any) (Rows, error)
	QueryRow(ctx context.Context, s *Stmt, args ...any) Row
}

// Tx is a write transaction.
type Tx interface {
	Querier
	// Queue runs a write whose answer nothing reads: a pipelined transaction
	// (Backend.Pipeline) sends it with its next round trip, and its error then ends the
	// transaction there; others run it at once.
	Queue(ctx context.Context, s *Stmt, args ...any) error
	// Notify tells c to the store's watchers once the transaction commits (never if it
	// rolls back).
	Notify(ctx context.Context, c storage.Change) error
	// ChainsChanged moves the store's chain epoch on with the commit.
	ChainsChanged(ctx context.Context) error
	// LockChains keeps the change apart from checkpoint writes (PostgreSQL's advisory
	// lock; SQLite's single writer does it already).
	LockChains(ctx context.Context) error
}

// Backend is what a store gives the shared layer.
type Backend interface {
	// Reader runs reads outside any transaction.
	Reader() Querier
	// Read runs fn in a read-only transaction that sees one snapshot.
	Read(ctx context.Context, fn func(context.Context, Querier) error) error
	// Write runs fn in a write transaction, without ctx's cancellation once begun.
	Write(ctx context.Context, fn func(context.Context, Tx) error) error
	// Pipeline is Write for a short transaction of a hot path, whose statements a
	// store that pays a round trip per statement sends pipelined (Tx.Queue).
	Pipeline(ctx context.Context, fn func(context.Context, Tx) error) error
	// Unique reports whether err is a unique constraint's violation.
	Unique(err error) bool
	// SetStatus moves response id to status (completed: its completed_at, or nil),
	// patching its stored object's "status" in place (the JSON is text, and its keys
	// keep their order): with SQLite's json_set, or in Go where the store has none for
	// text.
	SetStatus(ctx context.Context, tx Tx, id string, status storage.Status, completed any) error
	// InsertChunks stores chunks of a file from index from on, replacing any there:
	// the bulk insert each driver does best.
	InsertChunks(ctx context.Context, tx Tx, storeID, fileID string, from int, chunks []storage.NewChunk) error
	// ResponseWrites are the steps of a response's life that each store writes its
	// own way (lifecycle.go).
	ResponseWrites
	ChainLoads
}

// Dialect is what the shared layer needs to know of a store's SQL beyond the
// statements declared with SQL: its placeholders, for the few statements whose
// filters are chosen per call (list pages).
type Dialect struct {
	// name names the dialect's schema directory (schema/<name>).
	name string
	// placeholders are the first ones, made once.
	placeholders []string
	mark         string
	// arrays: the store binds a []string as an array (PostgreSQL's = ANY).
	arrays bool
	// schema reads the tables' columns and types (table, column, type), in order.
	schema *Stmt
	// storedOrder orders a whole table's rows as they were stored, where the store
	// keeps that order.
	storedOrder string
}

// The two dialects.
var (
	SQLite = newDialect(Dialect{name: "sqlite", mark: "?", storedOrder: ` ORDER BY rowid`,
		schema: SQL(`SELECT m.name, p.name, lower(p.type) FROM sqlite_master AS m, pragma_table_info(m.name) AS p
			WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`)})
	Postgres = newDialect(Dialect{name: "postgres", mark: "$", arrays: true,
		schema: SQL(`SELECT table_name, column_name, lower(data_type) FROM information_schema.columns
			WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)})
)

func newDialect(d Dialect) *Dialect {
	mark := d.mark
	d.placeholders = make([]string, 32)
	for i := range d.placeholders {
		d.placeholders[i] = mark + strconv.Itoa(i)
	}
	return &d
}

// placeholder is the n-th (from 1).
func (d *Dialect) placeholder(n int) string {
	if n < len(d.placeholders) {
		return d.placeholders[n]
	}
	return d.mark + strconv.Itoa(n)
}

// Shared is every record the stores keep alike; a store embeds it, so that its
// methods are the store's.
type Shared struct {
	Files
	VectorStores
	Keys
	Conversations
	Console
	Copy
	Journals
	Responses
	States
	Chains
}

// New is the shared layer over b, whose SQL is d's.
func New(b Backend, d *Dialect) Shared {
	return Shared{Files: Files{b, d}, VectorStores: VectorStores{b, d}, Keys: Keys{b}, Conversations: Conversations{b}, Console: Console{b, d}, Copy: Copy{b, d}, Journals: Journals{b}, Responses: Responses{b}, States: States{b}, Chains: Chains{b}}
}

// execOne runs a statement that must change a row, and answers notFound (or
// storage.ErrExists, for an insert that conflicts) when it changed none.
func execOne(ctx context.Context, q Querier, notFound error, s *Stmt, args ...any) error {
	n, err := q.Exec(ctx, s, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// queryAll runs a query and reads every row it returns with scan.
func queryAll[T any](ctx context.Context, q Querier, scan func(storage.RowScanner) (*T, error), s *Stmt, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, s, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return storage.ScanAll(rows, scan)
}

// notFound turns ErrNoRows into e.
func notFound(err, e error) error {
	if errors.Is(err, ErrNoRows) {
		return e
	}
	return err
}

// where builds the filter of a list page whose conditions are chosen per call, in the
// store's placeholders.
type where struct {
	d    *Dialect
	text strings.Builder
	args []any
}

// add appends cond followed by a placeholder for v (cond ends with its operator).
func (w *where) add(cond string, v any) {
	w.args = append(w.args, v)
	w.text.WriteString(cond)
	w.text.WriteString(w.d.placeholder(len(w.args)))
}

// arg is a placeholder for v, without a condition (a LIMIT).
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return w.d.placeholder(len(w.args))
}

// raw is a statement built per call (a list page's filters), already in the store's
// placeholders (Backend.Placeholder).
func raw(text string) *Stmt { return &Stmt{lite: text, pg: text, index: -1} }
