package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSealOpenRoundTrip(t *testing.T) {
	k := NewKey()
	for _, plain := range [][]byte{nil, []byte("x"), []byte(`{"text":"I should greet back."}`), bytes.Repeat([]byte("long "), 10000)} {
		for _, kind := range []Kind{Reasoning, Compaction} {
			blob := k.Seal(kind, plain)
			got, err := k.Open(kind, blob)
			if err != nil {
				t.Fatalf("%s of %d bytes: %v", kind, len(plain), err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("%s: got %q, want %q", kind, got, plain)
			}
			if strings.ContainsAny(blob, "+/=") {
				t.Errorf("blob %q is not unpadded base64url", blob)
			}
			if n := len(base64.RawURLEncoding.EncodeToString(make([]byte, minBlob+len(plain)))); len(blob) != n {
				t.Errorf("blob of %d bytes of plaintext is %d characters, want %d", len(plain), len(blob), n)
			}
		}
	}
}

// TestSealIsRandomized: the same plaintext seals to different blobs (fresh nonce), and
// the plaintext does not show through.
func TestSealIsRandomized(t *testing.T) {
	k := NewKey()
	plain := []byte("the same secret reasoning")
	a, b := k.Seal(Reasoning, plain), k.Seal(Reasoning, plain)
	if a == b {
		t.Fatal("two seals of one plaintext are equal: the nonce is not random")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(a)
	if bytes.Contains(raw, plain) || strings.Contains(a, "secret") {
		t.Fatal("the plaintext shows in the blob")
	}
}

func TestOpenRefuses(t *testing.T) {
	k := NewKey()
	// 15 bytes of text make a 49-byte blob, so standard base64 always pads it ("=="):
	// with a multiple of 3 it could come out identical to base64url, by chance.
	blob := k.Seal(Reasoning, []byte("reasoning text."))
	raw, _ := base64.RawURLEncoding.DecodeString(blob)
	if len(raw)%3 == 0 {
		t.Fatalf("blob of %d bytes: pick a text whose blob needs padding", len(raw))
	}
	enc := base64.RawURLEncoding.EncodeToString
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		return enc(b)
	}
	tests := []struct {
		name string
		key  *Key
		kind Kind
		blob string
		want error
	}{
		{"empty", k, Reasoning, "", ErrMalformed},
		{"not base64url", k, Reasoning, "gAAAAABpM0Yj-abc=", ErrMalformed},
		{"standard base64 with padding", k, Reasoning, base64.StdEncoding.EncodeToString(raw), ErrMalformed},
		{"header only", k, Reasoning, enc(raw[:headerSize-1]), ErrMalformed},
		{"unknown version", k, Reasoning, flip(0), ErrVersion},
		{"altered kind", k, Reasoning, flip(1), ErrTampered},
		{"altered key id", k, Reasoning, flip(2), ErrForeignKey},
		{"altered nonce", k, Reasoning, flip(headerSize), ErrTampered},
		{"altered ciphertext", k, Reasoning, flip(headerSize + nonceSize), ErrTampered},
		{"altered tag", k, Reasoning, flip(len(raw) - 1), ErrTampered},
		{"truncated by one byte", k, Reasoning, enc(raw[:len(raw)-1]), ErrTampered},
		{"truncated to the header", k, Reasoning, enc(raw[:headerSize]), ErrTampered},
		{"truncated text", k, Reasoning, blob[:len(blob)-4], ErrTampered},
		{"text cut inside a base64 group", k, Reasoning, blob[:len(blob)-len(blob)%4-3], ErrMalformed},
		{"extended", k, Reasoning, enc(append(bytes.Clone(raw), 0)), ErrTampered},
		{"other key", NewKey(), Reasoning, blob, ErrForeignKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key.Open(tt.kind, tt.blob)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %q, %v; want %v", got, err, tt.want)
			}
		})
	}

	t.Run("wrong kind", func(t *testing.T) {
		_, err := k.Open(Compaction, blob)
		var wk *WrongKindError
		if !errors.As(err, &wk) || wk.Got != Reasoning || wk.Want != Compaction {
			t.Fatalf("Open as compaction = %v; want a WrongKindError reasoning -> compaction", err)
		}
		if !strings.Contains(err.Error(), "reasoning") {
			t.Errorf("message %q does not name the kind", err)
		}
	})
}

// TestKeyFromSameBytes: a key is its bytes; what one instance seals another opens.
func TestKeyFromSameBytes(t *testing.T) {
	b := bytes.Repeat([]byte{7}, KeySize)
	k1, err := FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := FromBytes(b)
	if got, err := k2.Open(Compaction, k1.Seal(Compaction, []byte("summary"))); err != nil || string(got) != "summary" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := FromBytes(b[:16]); err == nil {
		t.Error("a 16-byte key was accepted; hearth's keys are AES-256")
	}
}

func TestLoadOrCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	k1, created, err := LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate: created %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != KeySize {
		t.Errorf("key file mode %v, size %d; want 0600, %d", fi.Mode().Perm(), fi.Size(), KeySize)
	}
	blob := k1.Seal(Reasoning, []byte("kept across restarts"))

	k2, created, err := LoadOrCreate(path)
	if err != nil || created {
		t.Fatalf("second LoadOrCreate: created %v, %v", created, err)
	}
	if got, err := k2.Open(Reasoning, blob); err != nil || string(got) != "kept across restarts" {
		t.Fatalf("the reloaded key opens %q, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key (no temporary files left)", len(entries))
	}

	// Another directory is another key.
	k3, _, err := LoadOrCreate(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k3.Open(Reasoning, blob); !errors.Is(err, ErrForeignKey) {
		t.Errorf("another directory's key opened the blob: %v", err)
	}
}

func TestLoadOrCreateRefusesBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadOrCreate(path)
	if err == nil || !strings.Contains(err.Error(), "holds 5 bytes") {
		t.Fatalf("LoadOrCreate over a 5-byte file = %v; want an error naming the size", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "short" {
		t.Error("a bad key file was overwritten; it must be left for the operator")
	}
	if _, _, err := LoadOrCreate(filepath.Join(t.TempDir(), "missing-dir", FileName)); err == nil {
		t.Error("LoadOrCreate in a missing directory succeeded")
	}
}

// TestLoadOrCreateConcurrent: servers starting at once on one directory agree on a key.
func TestLoadOrCreateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	const n = 8
	keys := make([]*Key, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, _, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	blob := keys[0].Seal(Compaction, []byte("one key"))
	for i, k := range keys {
		if k == nil {
			continue
		}
		if _, err := k.Open(Compaction, blob); err != nil {
			t.Errorf("key %d differs from key 0: %v", i, err)
		}
	}
}

// TestTag: a tag verifies for exactly the fields, kind and key it was made for; moving
// bytes between fields, changing one byte, another kind or another key all fail.
func TestTag(t *testing.T) {
	k := NewKey()
	fields := [][]byte{[]byte("owner"), []byte("nonce"), []byte("everything"), []byte("echo"), []byte(`{"message":"hi"}`)}
	tag := k.Tag(MCPApproval, fields...)
	if len(tag) != TagSize {
		t.Fatalf("tag of %d bytes, want %d", len(tag), TagSize)
	}
	if !k.Verify(tag, MCPApproval, fields...) {
		t.Fatal("a tag does not verify for its own fields")
	}
	if again := k.Tag(MCPApproval, fields...); !bytes.Equal(again, tag) {
		t.Error("the same fields give another tag")
	}
	same, _ := FromBytes(bytes.Repeat([]byte{7}, KeySize))
	twin, _ := FromBytes(bytes.Repeat([]byte{7}, KeySize))
	if !twin.Verify(same.Tag(MCPApproval, fields...), MCPApproval, fields...) {
		t.Error("a key made from the same bytes does not verify the tag")
	}
	refused := map[string]func() bool{
		"another key":  func() bool { return NewKey().Verify(tag, MCPApproval, fields...) },
		"another kind": func() bool { return k.Verify(tag, Reasoning, fields...) },
		"a field changed": func() bool {
			return k.Verify(tag, MCPApproval, fields[0], fields[1], fields[2], fields[3], []byte(`{"message":"ho"}`))
		},
		"bytes moved between fields": func() bool {
			return k.Verify(tag, MCPApproval, []byte("ownern"), []byte("once"), fields[2], fields[3], fields[4])
		},
		"a field less":  func() bool { return k.Verify(tag, MCPApproval, fields[:4]...) },
		"a short tag":   func() bool { return k.Verify(tag[:TagSize-1], MCPApproval, fields...) },
		"no tag at all": func() bool { return k.Verify(nil, MCPApproval, fields...) },
		"a flipped bit": func() bool {
			bad := bytes.Clone(tag)
			bad[3] ^= 1
			return k.Verify(bad, MCPApproval, fields...)
		},
	}
	for name, verify := range refused {
		if verify() {
			t.Errorf("%s: the tag verifies", name)
		}
	}
}
