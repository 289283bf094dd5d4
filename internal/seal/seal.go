// Package seal makes the opaque encrypted_content blobs hearth hands to clients that
// keep no state on the server (store: false): the reasoning of a reasoning item, the
// summary of a compaction item. A blob is authenticated encryption under one key of the
// server's, so a client can carry it and send it back but can neither read nor change
// it, and hearth can tell its own blobs from altered, cut or foreign ones.
//
// Blob format, version 1 (base64url without padding):
//
//	version (1 byte: 1) | kind (1 byte) | key id (4 bytes) | nonce (12 bytes) | ciphertext + GCM tag (16 bytes)
//
// The ciphertext is AES-256-GCM of the payload with the first six bytes (the header) as
// additional data, so changing the version, the kind or the key id breaks the tag as
// surely as changing the ciphertext. The key id (the first four bytes of a SHA-256 of
// the key) is there only to tell "sealed under another key" from "altered"; it reveals
// nothing of the key. Nonces are random: one key may seal about 2^32 blobs before a
// nonce repeat becomes a real risk, far beyond what one server produces.
//
// A tag (Key.Tag) is the other half: proof, without encryption, that hearth made a set
// of fields the client holds in plain view (an mcp_approval_request it issued), where a
// blob has no field to travel in. It is an HMAC-SHA256, cut to TagSize bytes, under a
// key derived from the same key file.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// Version is the blob format this package writes.
const Version = 1

// Kind says what a blob holds. It is sealed into the blob, so a blob of one kind is
// refused where another is expected (a reasoning blob sent as a compaction item).
type Kind byte

// Kinds of blobs.
const (
	Reasoning  Kind = 1
	Compaction Kind = 2
	// MCPApproval is the tag of an mcp_approval_request hearth issued (Key.Tag).
	MCPApproval Kind = 3
)

func (k Kind) String() string {
	switch k {
	case Reasoning:
		return "reasoning"
	case Compaction:
		return "compaction"
	case MCPApproval:
		return "mcp approval"
	}
	return fmt.Sprintf("kind %d", byte(k))
}

const (
	headerSize = 1 + 1 + 4
	nonceSize  = 12
	tagSize    = 16
	minBlob    = headerSize + nonceSize + tagSize
)

// Reasons Open refuses a blob. Their texts are written for the API client that sent
// the blob, since they end up in a 400's message.
var (
	ErrMalformed  = errors.New("it is not encrypted content produced by this server (not a whole hearth blob)")
	ErrVersion    = errors.New("it was produced by a newer or unknown version of hearth")
	ErrForeignKey = errors.New("it was sealed by another hearth server or under a key this server no longer has")
	ErrTampered   = errors.New("it has been altered or truncated")
)

// WrongKindError: the blob is valid but holds another kind of content.
type WrongKindError struct{ Got, Want Kind }

func (e *WrongKindError) Error() string {
	return fmt.Sprintf("it holds %s content, not %s content", e.Got, e.Want)
}

// Key seals and opens blobs. It is safe for concurrent use.
type Key struct {
	aead cipher.AEAD
	id   [4]byte
	// mac is the HMAC-SHA256 key of Tag, derived from the key so that one key file
	// serves both and neither use can stand in for the other.
	mac [32]byte
}

// NewKey returns a fresh random key, for a server that keeps nothing across restarts.
func NewKey() *Key {
	var b [KeySize]byte
	rand.Read(b[:]) // never fails (crypto/rand doc, Go 1.24+)
	k, _ := FromBytes(b[:])
	return k
}

// FromBytes returns the key of KeySize raw bytes.
func FromBytes(b []byte) (*Key, error) {
	if len(b) != KeySize {
		return nil, fmt.Errorf("seal: a key is %d bytes, got %d", KeySize, len(b))
	}
	block, err := aes.NewCipher(b)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	k := &Key{aead: aead}
	sum := sha256.Sum256(append([]byte("hearth seal key id\x00"), b...))
	copy(k.id[:], sum[:])
	k.mac = sha256.Sum256(append([]byte("hearth seal mac key\x00"), b...))
	return k, nil
}

var encoding = base64.RawURLEncoding

// TagSize is the size of a tag: HMAC-SHA256 cut to 128 bits, as unguessable as a
// GCM tag.
const TagSize = 16

// Tag authenticates fields as a whole for kind: a short value hearth hands out inside
// something the client echoes back (an mcp_approval_request's id), where a blob would
// not fit, and that proves later that hearth made exactly these fields. Nothing is
// encrypted: the fields travel next to the tag. Each field is length-prefixed, so no
// two different lists of fields share a tag.
func (k *Key) Tag(kind Kind, fields ...[]byte) []byte {
	m := hmac.New(sha256.New, k.mac[:])
	m.Write([]byte{Version, byte(kind)})
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		m.Write(f)
	}
	return m.Sum(nil)[:TagSize]
}

// Verify reports whether tag is Tag(kind, fields...), in constant time.
func (k *Key) Verify(tag []byte, kind Kind, fields ...[]byte) bool {
	return len(tag) == TagSize && hmac.Equal(tag, k.Tag(kind, fields...))
}

// Seal encrypts plaintext as a blob of kind.
func (k *Key) Seal(kind Kind, plaintext []byte) string {
	out := make([]byte, headerSize+nonceSize, minBlob+len(plaintext))
	out[0], out[1] = Version, byte(kind)
	copy(out[2:headerSize], k.id[:])
	rand.Read(out[headerSize:])
	out = k.aead.Seal(out, out[headerSize:], plaintext, out[:headerSize])
	return encoding.EncodeToString(out)
}

// Open decrypts a blob of kind. Its errors are ErrMalformed, ErrVersion,
// ErrForeignKey, ErrTampered or a *WrongKindError.
func (k *Key) Open(kind Kind, blob string) ([]byte, error) {
	raw, err := encoding.DecodeString(blob)
	if err != nil || len(raw) < headerSize {
		return nil, ErrMalformed
	}
	if raw[0] != Version {
		return nil, ErrVersion
	}
	if [4]byte(raw[2:headerSize]) != k.id {
		return nil, ErrForeignKey
	}
	if len(raw) < minBlob {
		return nil, ErrTampered
	}
	plain, err := k.aead.Open(nil, raw[headerSize:headerSize+nonceSize], raw[headerSize+nonceSize:], raw[:headerSize])
	if err != nil {
		return nil, ErrTampered
	}
	// The kind is checked only once the tag proved the header genuine, so an altered
	// kind byte reads as tampering rather than as a wrong kind.
	if got := Kind(raw[1]); got != kind {
		return nil, &WrongKindError{Got: got, Want: kind}
	}
	return plain, nil
}
