package storage

import (
	"strings"
	"testing"
)

func TestOwnerOf(t *testing.T) {
	// SHA-256 of "abc", so the owner key is stable across versions and tools.
	if got, want := OwnerOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("OwnerOf(abc) = %s, want %s", got, want)
	}
	if OwnerOf("sk-alice") == OwnerOf("sk-bob") {
		t.Fatal("different keys, same owner")
	}
}

// TestNewKey: the record every store keeps for a new key, and what NewKey refuses.
func TestNewKey(t *testing.T) {
	k, secret, err := NewKey("  ci  ", KeyOptions{CacheGroup: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) != len(KeyPrefix)+48 {
		t.Errorf("secret %q", secret)
	}
	if k.Name != "ci" || k.Role != RoleUser || k.Hash != OwnerOf(secret) ||
		k.Prefix != secret[:len(KeyPrefix)+6] || !strings.HasPrefix(k.ID, "key_") || k.CacheGroup != "team-a" || !k.Active() {
		t.Errorf("key %+v for secret %q", k, secret)
	}
	for _, c := range []struct {
		name string
		opt  KeyOptions
	}{{" ", KeyOptions{}}, {"x", KeyOptions{Role: "root"}}, {"x", KeyOptions{CacheGroup: "a b"}}} {
		if _, _, err := NewKey(c.name, c.opt); err == nil {
			t.Errorf("NewKey(%q, %+v) accepted", c.name, c.opt)
		}
	}
}
