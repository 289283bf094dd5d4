package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// TestKeyRolesMigration: keys created before roles existed become user keys when the
// database is upgraded (0006_key_roles.sql says why).
func TestKeyRolesMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	ms, err := sqlstore.SQLite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []sqlstore.Migration
	for _, m := range ms {
		if strings.HasSuffix(m.Name, "_key_roles") {
			break
		}
		before = append(before, m)
	}
	if len(before) == len(ms) {
		t.Fatal("no key_roles migration")
	}
	// The database as a hearth from before roles left it, with one key.
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := raw.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, m := range before {
		if err := applyMigration(ctx, raw, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, prefix, created_at) VALUES ('key_old', 'old', ?, 'hk-abc', 1)`, storage.OwnerOf("hk-old")); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k, err := db.KeyByHash(ctx, storage.OwnerOf("hk-old"))
	if err != nil {
		t.Fatal(err)
	}
	if k.Role != storage.RoleUser {
		t.Errorf("a key from before roles has role %q, want user", k.Role)
	}
	// Nor had it a cache group (0012_key_cache_groups.sql): it keeps a group of its own.
	if k.CacheGroup != "" {
		t.Errorf("a key from before cache groups is in group %q", k.CacheGroup)
	}
}
