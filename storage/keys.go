package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of the key methods.
var (
	// ErrKeyNotFound: no key has that id or name.
	ErrKeyNotFound = errors.New("storage: no such API key")
	// ErrKeyExists: a key of that name exists (revoked ones included: names are never
	// reused, so logs and metrics keep meaning one key).
	ErrKeyExists = errors.New("storage: an API key of that name exists")
	// ErrKeyRevoked: the key was revoked, and what is given to it nobody could reach.
	ErrKeyRevoked = errors.New("storage: the API key is revoked")
)

// KeyPrefix starts every key hearth generates, so a leaked one is recognisable (and
// secret scanners can be taught the pattern).
const KeyPrefix = "hk-"

// Role is what a key may do.
type Role string

// Roles of keys.
const (
	// RoleUser generates, reads the model list and uses its own responses.
	RoleUser Role = "user"
	// RoleAdmin also manages the runtime's models and reads /metrics.
	RoleAdmin Role = "admin"
)

// Key is an API key's record. The key itself is not stored; Hash is OwnerOf(key).
type Key struct {
	ID        string
	Name      string
	Hash      string
	Prefix    string
	Role      Role
	CreatedAt time.Time
	// RevokedAt is zero for an active key.
	RevokedAt time.Time
	// CacheGroup names the keys that see each other's prompts in the runtime's KV
	// cache as cached_tokens (an admin's choice); "" is a group of the key alone.
	CacheGroup string
}

// KeyOptions are what a key is created with besides its name.
type KeyOptions struct {
	Role Role // RoleUser when empty
	// CacheGroup puts the key in a sharing group (Key.CacheGroup); "" leaves it alone.
	CacheGroup string
}

// CheckCacheGroup reports whether group may name a cache group: "" (none), or 1 to 64
// letters, digits, '.', '_' and '-', so it reads the same in a shell, a log and a
// metric label.
func CheckCacheGroup(group string) error {
	if len(group) > 64 {
		return fmt.Errorf("storage: cache group %.64q...: longer than 64 characters", group)
	}
	for _, r := range group {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("storage: cache group %q: use letters, digits, '.', '_' and '-'", group)
		}
	}
	return nil
}

// NewKey validates a key's name and options and generates the key: its record (what a
// store keeps, with only the hash of the secret) and the secret, returned once. Every
// store creates keys through it, so keys look alike whichever store made them.
func NewKey(name string, opt KeyOptions) (Key, string, error) {
	role := opt.Role
	if role == "" {
		role = RoleUser
	}
	if err := CheckCacheGroup(opt.CacheGroup); err != nil {
		return Key{}, "", err
	}
	if role != RoleUser && role != RoleAdmin {
		return Key{}, "", fmt.Errorf("storage: unknown key role %q", role)
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return Key{}, "", errors.New("storage: a key needs a name")
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Key{}, "", fmt.Errorf("storage: generate key: %w", err)
	}
	secret := KeyPrefix + hex.EncodeToString(raw[:])
	var idRaw [8]byte
	rand.Read(idRaw[:])
	return Key{
		ID: "key_" + hex.EncodeToString(idRaw[:]), Name: name, Hash: OwnerOf(secret),
		Prefix: secret[:len(KeyPrefix)+6], Role: role, CreatedAt: time.Now().Truncate(time.Millisecond),
		CacheGroup: opt.CacheGroup,
	}, secret, nil
}

// Active reports whether the key may be used.
func (k *Key) Active() bool { return k.RevokedAt.IsZero() }

// KeylessOwner is the owner of what was made while hearth required no key (no key
// existed and none was configured): OwnerOf(""). Once a key exists no request is
// that owner any more; admin keys read and manage its records by id, and
// AdoptKeyless gives them to a key.
var KeylessOwner = OwnerOf("")

// Adopted counts the records AdoptKeyless gave a key.
type Adopted struct {
	Responses, Conversations, Files, VectorStores int64
}

// Total is every record adopted.
func (a Adopted) Total() int64 { return a.Responses + a.Conversations + a.Files + a.VectorStores }

// AdoptTables are the tables whose rows carry an owner; the rest (items, journals,
// conversation items, file contents, a vector store's files and chunks) hang from
// these and follow them.
var AdoptTables = []string{"responses", "conversations", "files", "vector_stores"}

// SetAdopted records n rows of table adopted.
func (a *Adopted) SetAdopted(table string, n int64) {
	switch table {
	case "responses":
		a.Responses = n
	case "conversations":
		a.Conversations = n
	case "files":
		a.Files = n
	case "vector_stores":
		a.VectorStores = n
	}
}
