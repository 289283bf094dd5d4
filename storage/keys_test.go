package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
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
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) < 40 || !strings.HasPrefix(secret, alice.Prefix) {
		t.Errorf("secret %q, prefix %q", secret, alice.Prefix)
	}
	if alice.Hash != OwnerOf(secret) {
		t.Errorf("hash is not OwnerOf(secret)")
	}
	if _, _, err := db.CreateKey(ctx, "alice"); !errors.Is(err, ErrKeyExists) {
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

	k, err := db.KeyByHash(ctx, OwnerOf(secret))
	if err != nil || k.Name != "alice" || !k.Active() {
		t.Fatalf("KeyByHash(alice) = %+v, %v", k, err)
	}
	if _, err := db.KeyByHash(ctx, OwnerOf("hk-nope")); !errors.Is(err, ErrKeyNotFound) {
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
	if _, err := db.RevokeKey(ctx, "carol"); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("revoke unknown: %v", err)
	}
	if k, _ := db.KeyByHash(ctx, OwnerOf(secret)); k == nil || k.Active() {
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
	if _, _, err := db.CreateKey(ctx, "alice"); !errors.Is(err, ErrKeyExists) {
		t.Errorf("recreate revoked alice: %v", err)
	}
}
