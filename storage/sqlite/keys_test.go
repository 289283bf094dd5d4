package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hearth/storage"
)

func TestKeyLifecycle(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()

	if has, err := db.HasKeys(ctx); err != nil || has {
		t.Fatalf("HasKeys on a new database = %v, %v", has, err)
	}
	alice, secret, err := db.CreateKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, storage.KeyPrefix) || len(secret) < 40 || !strings.HasPrefix(secret, alice.Prefix) {
		t.Errorf("secret %q, prefix %q", secret, alice.Prefix)
	}
	if alice.Hash != storage.OwnerOf(secret) {
		t.Errorf("hash is not OwnerOf(secret)")
	}
	if _, _, err := db.CreateKey(ctx, "alice"); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("second alice: %v, want ErrKeyExists", err)
	}
	if _, _, err := db.CreateKey(ctx, " "); err == nil {
		t.Errorf("a key without a name was created")
	}
	bob, bobSecret, err := db.CreateKey(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if bobSecret == secret {
		t.Fatal("two keys alike")
	}

	k, err := db.KeyByHash(ctx, storage.OwnerOf(secret))
	if err != nil || k.Name != "alice" || !k.Active() {
		t.Fatalf("KeyByHash(alice) = %+v, %v", k, err)
	}
	if _, err := db.KeyByHash(ctx, storage.OwnerOf("hk-nope")); !errors.Is(err, storage.ErrKeyNotFound) {
		t.Errorf("unknown key: %v", err)
	}

	// Revoke by name, then by id; revoking twice is fine.
	if k, err := db.RevokeKey(ctx, "alice"); err != nil || k.Active() {
		t.Fatalf("revoke alice = %+v, %v", k, err)
	}
	if k, err := db.RevokeKey(ctx, bob.ID); err != nil || k.Active() || k.Name != "bob" {
		t.Fatalf("revoke bob by id = %+v, %v", k, err)
	}
	if _, err := db.RevokeKey(ctx, "alice"); err != nil {
		t.Errorf("revoke again: %v", err)
	}
	if _, err := db.RevokeKey(ctx, "carol"); !errors.Is(err, storage.ErrKeyNotFound) {
		t.Errorf("revoke unknown: %v", err)
	}
	if k, _ := db.KeyByHash(ctx, storage.OwnerOf(secret)); k == nil || k.Active() {
		t.Errorf("alice still active after revoke: %+v", k)
	}
	keys, err := db.ListKeys(ctx)
	if err != nil || len(keys) != 2 || keys[0].Name != "alice" || keys[1].Name != "bob" {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
	// All revoked: the database still has keys, so a server keeps requiring one.
	if has, _ := db.HasKeys(ctx); !has {
		t.Errorf("HasKeys false after revoking every key")
	}
	// A revoked name is not reused.
	if _, _, err := db.CreateKey(ctx, "alice"); !errors.Is(err, storage.ErrKeyExists) {
		t.Errorf("recreate revoked alice: %v", err)
	}
}

func TestKeyRoles(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	user, userSecret, err := db.CreateKey(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	admin, adminSecret, err := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if user.Role != storage.RoleUser || admin.Role != storage.RoleAdmin {
		t.Fatalf("created roles %q, %q", user.Role, admin.Role)
	}
	for secret, want := range map[string]storage.Role{userSecret: storage.RoleUser, adminSecret: storage.RoleAdmin} {
		k, err := db.KeyByHash(ctx, storage.OwnerOf(secret))
		if err != nil || k.Role != want {
			t.Errorf("KeyByHash role %v, %v; want %q", k, err, want)
		}
	}
	keys, _ := db.ListKeys(ctx)
	if len(keys) != 2 || keys[0].Role != storage.RoleUser || keys[1].Role != storage.RoleAdmin {
		t.Errorf("ListKeys roles: %+v", keys)
	}
	if _, _, err := db.CreateKeyAs(ctx, "eve", storage.Role("root")); err == nil {
		t.Error("a key of an unknown role was created")
	}
}

// TestKeyRolesMigration: keys created before roles existed become user keys when the
// database is upgraded (0006_key_roles.sql says why).
func TestKeyRolesMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []migration
	for _, m := range ms {
		if strings.HasSuffix(m.name, "_key_roles") {
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

// TestKeyCacheGroups: a key is created in a cache group or alone, an admin moves it in
// and out by name or id, and a bad group name is refused without a change.
func TestKeyCacheGroups(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	alice, aliceSecret, err := db.CreateKeyWith(ctx, "alice", storage.KeyOptions{CacheGroup: "team1"})
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := db.CreateKey(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if alice.CacheGroup != "team1" || alice.Role != storage.RoleUser || bob.CacheGroup != "" {
		t.Fatalf("created alice %+v, bob %+v", alice, bob)
	}
	if k, err := db.KeyByHash(ctx, storage.OwnerOf(aliceSecret)); err != nil || k.CacheGroup != "team1" {
		t.Fatalf("KeyByHash(alice) = %+v, %v", k, err)
	}
	if k, err := db.SetKeyCacheGroup(ctx, "bob", "team1"); err != nil || k.CacheGroup != "team1" || k.ID != bob.ID {
		t.Fatalf("bob into team1 = %+v, %v", k, err)
	}
	if k, err := db.SetKeyCacheGroup(ctx, alice.ID, ""); err != nil || k.CacheGroup != "" {
		t.Fatalf("alice out of team1 by id = %+v, %v", k, err)
	}
	keys, _ := db.ListKeys(ctx)
	if len(keys) != 2 || keys[0].CacheGroup != "" || keys[1].CacheGroup != "team1" {
		t.Errorf("ListKeys groups: %+v", keys)
	}
	for _, bad := range []string{"team 1", "a/b", strings.Repeat("g", 65), "ü"} {
		if _, err := db.SetKeyCacheGroup(ctx, "bob", bad); err == nil {
			t.Errorf("cache group %q accepted", bad)
		}
		if _, _, err := db.CreateKeyWith(ctx, "carol", storage.KeyOptions{CacheGroup: bad}); err == nil {
			t.Errorf("key created in cache group %q", bad)
		}
	}
	if k, _ := db.KeyByHash(ctx, bob.Hash); k.CacheGroup != "team1" {
		t.Errorf("a refused group changed bob's to %q", k.CacheGroup)
	}
	if _, err := db.SetKeyCacheGroup(ctx, "carol", "team1"); !errors.Is(err, storage.ErrKeyNotFound) {
		t.Errorf("unknown key: %v", err)
	}
}
