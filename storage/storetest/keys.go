package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"hearth/storage"
)

func testKeyLifecycle(t *testing.T, open Opener) {
	db := open(t)
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

func testKeyRoles(t *testing.T, open Opener) {
	db := open(t)
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

// testKeyCacheGroups: a key is created in a cache group or alone, an admin moves it in
// and out by name or id, and a bad group name is refused without a change.
func testKeyCacheGroups(t *testing.T, open Opener) {
	db := open(t)
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

// testCheckKey: CheckKey answers what HasKeys, KeyByHash and ChainEpoch answer, read
// at once: before any key, for a key found, revoked, and unknown, and with the chain
// epoch as it moves.
func testCheckKey(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	check := func(what, hash string) storage.KeyCheck {
		t.Helper()
		c, err := db.CheckKey(ctx, hash)
		if err != nil {
			t.Fatalf("%s: CheckKey: %v", what, err)
		}
		if e := db.ChainEpoch(); c.Epoch != e {
			t.Errorf("%s: CheckKey's epoch %d, ChainEpoch %d", what, c.Epoch, e)
		}
		return c
	}
	if c := check("no keys", ""); c.HasKeys || c.Key != nil {
		t.Errorf("no keys: %+v", c)
	}
	if c := check("no keys, a key asked for", storage.OwnerOf("hk-nope")); c.HasKeys || c.Key != nil {
		t.Errorf("no keys, a key asked for: %+v", c)
	}
	alice, secret, err := db.CreateKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c := check("alice", storage.OwnerOf(secret)); !c.HasKeys || c.Key == nil || c.Key.ID != alice.ID || !c.Key.Active() {
		t.Errorf("alice: %+v", c)
	}
	if c := check("an unknown key", storage.OwnerOf("hk-nope")); !c.HasKeys || c.Key != nil {
		t.Errorf("an unknown key: %+v", c)
	}
	if c := check("none asked for", ""); !c.HasKeys || c.Key != nil {
		t.Errorf("none asked for: %+v", c)
	}
	if _, err := db.RevokeKey(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if c := check("alice revoked", storage.OwnerOf(secret)); !c.HasKeys || c.Key == nil || c.Key.Active() {
		t.Errorf("alice revoked: %+v", c)
	}
	e0 := check("before a deletion", "").Epoch
	Turn(t, db, "alice", "resp_1", "", []storage.Item{UserMessage("msg_1", "Hi")}, nil)
	if err := db.DeleteResponse(ctx, "alice", "resp_1"); err != nil {
		t.Fatal(err)
	}
	if e := check("after a deletion", "").Epoch; e == e0 {
		t.Errorf("CheckKey's epoch did not move with a deletion (%d)", e)
	}
}

// testAdoptKeyless: what was made without keys (storage.KeylessOwner) goes to the key
// adopting it, every kind of record at once, and nothing of another owner moves. A
// revoked or unknown key adopts nothing.
func testAdoptKeyless(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	keyless := storage.KeylessOwner
	Turn(t, db, keyless, "resp-k", "", []storage.Item{UserMessage("msg-k", "hi")}, []storage.Item{AssistantMessage("msg-k2", "hello")})
	Turn(t, db, alice, "resp-a", "", []storage.Item{UserMessage("msg-a", "hi")}, nil)
	if err := db.CreateConversation(ctx, storage.NewConversation{ID: "conv-k", Owner: keyless, Metadata: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateFile(ctx, storage.NewFile{ID: "file-k", Owner: keyless, Filename: "k.txt", Purpose: "assistants", Content: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-k", Owner: keyless, Name: "k", Model: "embed",
		Metadata: json.RawMessage(`{}`), Files: []storage.NewVectorStoreFile{{FileID: "file-k"}}}); err != nil {
		t.Fatal(err)
	}
	carol, secret, err := db.CreateKey(ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AdoptKeyless(ctx, "nobody"); !errors.Is(err, storage.ErrKeyNotFound) {
		t.Errorf("adopt by an unknown key: %v", err)
	}
	if _, _, err := db.CreateKey(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	db.RevokeKey(ctx, "gone")
	if _, _, err := db.AdoptKeyless(ctx, "gone"); !errors.Is(err, storage.ErrKeyRevoked) {
		t.Errorf("adopt by a revoked key: %v", err)
	}
	k, got, err := db.AdoptKeyless(ctx, "carol")
	if err != nil || k.ID != carol.ID || got != (storage.Adopted{Responses: 1, Conversations: 1, Files: 1, VectorStores: 1}) {
		t.Fatalf("adopt = %+v, %+v, %v", k, got, err)
	}
	owner := storage.OwnerOf(secret)
	if _, err := db.GetResponse(ctx, owner, "resp-k"); err != nil {
		t.Errorf("adopted response: %v", err)
	}
	if c, err := db.LoadChain(ctx, owner, "resp-k"); err != nil || len(c.Items) != 2 {
		t.Errorf("adopted chain: %+v, %v", c, err)
	}
	if _, err := db.GetConversation(ctx, owner, "conv-k"); err != nil {
		t.Errorf("adopted conversation: %v", err)
	}
	if b, err := db.FileContent(ctx, owner, "file-k"); err != nil || string(b) != "k" {
		t.Errorf("adopted file: %q, %v", b, err)
	}
	if v, err := db.GetVectorStore(ctx, owner, "vs-k"); err != nil || v.Files.Total != 1 {
		t.Errorf("adopted vector store: %+v, %v", v, err)
	}
	if _, err := db.GetResponse(ctx, keyless, "resp-k"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the keyless owner still reads the adopted response: %v", err)
	}
	if _, err := db.GetResponse(ctx, alice, "resp-a"); err != nil {
		t.Errorf("another owner's response moved: %v", err)
	}
	if _, got, err := db.AdoptKeyless(ctx, "carol"); err != nil || got.Total() != 0 {
		t.Errorf("a second adoption: %+v, %v", got, err)
	}
}
