package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/storage"
)

// ownerKey is the gin context key of the caller's storage owner.
const ownerKey = "hearth.owner"

// keyring checks the keys given in the configuration (--api-key). Keys are compared by
// their SHA-256 in constant time, so neither a key's length nor its prefix leaks
// through timing.
type keyring struct {
	sums [][32]byte
}

func newKeyring(keys []string) *keyring {
	k := &keyring{}
	for _, key := range keys {
		if key = strings.TrimSpace(key); key != "" {
			k.sums = append(k.sums, sha256.Sum256([]byte(key)))
		}
	}
	return k
}

func (k *keyring) enabled() bool { return len(k.sums) > 0 }

// find returns the 1-based index of key among the configured keys, or 0.
func (k *keyring) find(key string) int {
	sum := sha256.Sum256([]byte(key))
	found := 0
	for i, s := range k.sums {
		found |= subtle.ConstantTimeCompare(sum[:], s[:]) * (i + 1)
	}
	return found
}

// dbKeys knows whether the database has keys. Once it has (revoked ones count), it
// always will, so that is remembered; until then each request asks, so the first
// `hearth keys create` turns authentication on in a running server.
type dbKeys struct {
	db   *storage.DB
	seen atomic.Bool
}

// authenticate requires `Authorization: Bearer <key>` when keys are configured or the
// database has any, and records who calls: the storage owner (OwnerOf(key)) and the
// key's name for logs and metrics. Database keys are looked up on every request (one
// read of a unique index), so a key revoked with `hearth keys revoke` fails at once.
func (s *Server) authenticate(c *gin.Context) {
	m := meta(c)
	ctx := c.Request.Context()
	required := s.keys.enabled()
	if !required && s.dbKeys.db != nil {
		if s.dbKeys.seen.Load() {
			required = true
		} else if has, err := s.dbKeys.db.HasKeys(ctx); err != nil {
			s.writeError(c, fmt.Errorf("authenticate: %w", err))
			return
		} else if has {
			s.dbKeys.seen.Store(true)
			required = true
		}
	}
	if !required {
		m.key, m.fairness = "anonymous", "ip:"+c.ClientIP()
		c.Set(ownerKey, storage.OwnerOf(""))
		return
	}
	m.key = "unauthenticated" // until a key checks out
	h := c.GetHeader("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		msg := "Incorrect API key provided."
		if h == "" {
			msg = "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'."
		}
		s.writeError(c, hearth.InvalidAPIKey(msg))
		return
	}
	name := ""
	if i := s.keys.find(key); i > 0 {
		// Configured keys have no name; their position names them without showing them.
		name = fmt.Sprintf("config-%d", i)
	} else if s.dbKeys.db != nil {
		k, err := s.dbKeys.db.KeyByHash(ctx, storage.OwnerOf(key))
		switch {
		case errors.Is(err, storage.ErrKeyNotFound):
		case err != nil:
			s.writeError(c, fmt.Errorf("authenticate: %w", err))
			return
		case !k.Active():
			s.writeError(c, hearth.InvalidAPIKey("This API key was revoked."))
			return
		default:
			name = k.Name
		}
	}
	if name == "" {
		s.writeError(c, hearth.InvalidAPIKey("Incorrect API key provided."))
		return
	}
	m.key, m.fairness = name, "key:"+name
	m.log = m.log.With("key", name)
	c.Set(ownerKey, storage.OwnerOf(key))
}

func owner(c *gin.Context) string { return c.GetString(ownerKey) }
