package storage

import "testing"

func TestOwnerOf(t *testing.T) {
	// SHA-256 of "abc", so the owner key is stable across versions and tools.
	if got, want := OwnerOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("OwnerOf(abc) = %s, want %s", got, want)
	}
	if OwnerOf("sk-alice") == OwnerOf("sk-bob") {
		t.Fatal("different keys, same owner")
	}
}
