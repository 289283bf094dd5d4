package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/storage"
)

// ownerKey is the gin context key of the caller's storage owner.
const ownerKey = "hearth.owner"

// keyring checks bearer keys. Keys are compared by their SHA-256 in constant time, so
// neither a key's length nor its prefix leaks through timing.
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

func (k *keyring) valid(key string) bool {
	sum := sha256.Sum256([]byte(key))
	ok := 0
	for _, s := range k.sums {
		ok |= subtle.ConstantTimeCompare(sum[:], s[:])
	}
	return ok == 1
}

// authenticate requires `Authorization: Bearer <key>` when keys are configured and
// records the caller's owner id, under which its responses are stored and found.
func (s *Server) authenticate(c *gin.Context) {
	if !s.keys.enabled() {
		c.Set(ownerKey, storage.OwnerOf(""))
		return
	}
	h := c.GetHeader("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || !s.keys.valid(strings.TrimSpace(key)) {
		msg := "Incorrect API key provided."
		if h == "" {
			msg = "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'."
		}
		s.writeError(c, hearth.InvalidAPIKey(msg))
		return
	}
	c.Set(ownerKey, storage.OwnerOf(strings.TrimSpace(key)))
}

func owner(c *gin.Context) string { return c.GetString(ownerKey) }
