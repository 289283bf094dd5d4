package sqlstore

import "testing"

// PostgreSQL's form of a statement numbers SQLite's placeholders, bare ones in order
// and numbered ones as they are, and leaves quoted text alone.
func TestNumbered(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1 FROM t WHERE a = ? AND b = ?`, `SELECT 1 FROM t WHERE a = $1 AND b = $2`},
		{`UPDATE t SET a = ?1 WHERE (id = ?2 OR name = ?2)`, `UPDATE t SET a = $1 WHERE (id = $2 OR name = $2)`},
		{`SELECT '?', "a?b", ? FROM t WHERE s = 'it''s ?'`, `SELECT '?', "a?b", $1 FROM t WHERE s = 'it''s ?'`},
		{`SELECT ?10, ?`, `SELECT $10, $1`},
		{`no placeholders`, `no placeholders`},
	} {
		if got := SQL(c.in).Postgres(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
		if got := SQL(c.in).SQLite(); got != c.in {
			t.Errorf("SQLite form changed: %s", got)
		}
	}
}

// The placeholders of statements built per call (list filters) are each dialect's
// numbered form, past the ones made in advance too.
func TestPlaceholdersPerDialect(t *testing.T) {
	if got := SQLite.placeholder(3); got != "?3" {
		t.Errorf("SQLite placeholder 3 = %q", got)
	}
	if got := Postgres.placeholder(40); got != "$40" {
		t.Errorf("PostgreSQL placeholder 40 = %q", got)
	}
}
