package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/internal/textcap"
	"hearth/storage"
)

// Gin context keys: the caller's storage owner, its credential, and the chain epoch
// read with its key (epochOf).
const (
	ownerKey  = "hearth.owner"
	callerKey = "hearth.caller"
	epochKey  = "hearth.epoch"
)

// caller is the credential a request authenticated with.
type caller struct {
	// role is empty when no key is required (no keys anywhere: loopback only); then
	// the boundary checks are the protection.
	role storage.Role
	// hash is OwnerOf(key) of a database key, which can be revoked while a
	// connection lives; empty for configured keys.
	hash string
}

func callerOf(c *gin.Context) caller {
	v, _ := c.Get(callerKey)
	cl, _ := v.(caller)
	return cl
}

// admin reports whether the caller may manage models and read metrics: an admin key,
// or anyone when no key is required.
func (cl caller) admin() bool { return cl.role == "" || cl.role == storage.RoleAdmin }

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
	db   storage.KeyLookup
	seen atomic.Bool
}

// authenticate requires `Authorization: Bearer <key>` (or `x-api-key: <key>`) when keys are configured or the
// database has any, and records who calls: the storage owner (OwnerOf(key)) and the
// key's name for logs and metrics. Database keys are looked up on every request (one
// read of a unique index), so a key revoked with `hearth keys revoke` fails at once.
// That read also answers whether the database has keys and reads the chain epoch
// (storage.KeyCheck), which the request's chain reads then start from (epochKey): on
// PostgreSQL one round trip where each would be one.
func (s middleware) authenticate(c *gin.Context) {
	m := meta(c)
	ctx := c.Request.Context()
	h := c.GetHeader("Authorization")
	// The scheme is case-insensitive (RFC 7235 section 2.1): "bearer" and "BEARER" too.
	scheme, key, ok := strings.Cut(strings.TrimSpace(h), " ")
	ok = ok && strings.EqualFold(scheme, "Bearer")
	key = strings.TrimSpace(key)
	if !ok {
		key = ""
	}
	if x := strings.TrimSpace(c.GetHeader("X-Api-Key")); key == "" && x != "" {
		// Anthropic's clients (Claude Code, the SDKs) send the key as x-api-key: the
		// same key, on every path.
		key, h = x, x
	}
	configured := 0
	if key != "" {
		configured = s.keys.find(key)
	}
	required := s.keys.enabled() || s.dbKeys.seen.Load()
	// The database is read when it decides whether a key is required (none seen yet)
	// or which key this is (one not configured); a request refused for want of a key
	// reads nothing.
	var check storage.KeyCheck
	if s.dbKeys.db != nil && configured == 0 && (!required || key != "") {
		hash := ""
		if key != "" {
			hash = storage.OwnerOf(key)
		}
		var err error
		if check, err = s.dbKeys.db.CheckKey(ctx, hash); err != nil {
			s.writeError(c, fmt.Errorf("authenticate: %w", err))
			return
		}
		c.Set(epochKey, check.Epoch)
		if check.HasKeys {
			s.dbKeys.seen.Store(true)
			required = true
		}
	}
	if !required {
		m.Key, m.Fairness = "anonymous", "ip:"+m.Client
		c.Set(ownerKey, storage.OwnerOf(""))
		return
	}
	m.Key = "unauthenticated" // until a key checks out
	if key == "" {
		msg := "Incorrect API key provided."
		if h == "" {
			msg = "You didn't provide an API key. Send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'."
		}
		s.writeError(c, hearth.InvalidAPIKey(msg))
		return
	}
	name, group := "", ""
	cl := caller{role: storage.RoleAdmin} // the operator set the configured keys
	if configured > 0 {
		// Configured keys have no name; their position names them without showing them.
		name = fmt.Sprintf("config-%d", configured)
		group = "key:" + name
	} else if k := check.Key; k != nil {
		if !k.Active() {
			s.writeError(c, hearth.InvalidAPIKey("This API key was revoked."))
			return
		}
		name = k.Name
		cl = caller{role: k.Role, hash: k.Hash}
		group = cacheGroupOf(k)
	}
	if name == "" {
		s.writeError(c, hearth.InvalidAPIKey("Incorrect API key provided."))
		return
	}
	m.Key, m.Fairness = name, "key:"+name
	m.Log = m.Log.With("key", name)
	c.Set(ownerKey, storage.OwnerOf(key))
	c.Set(callerKey, cl)
	m.CacheGroup = group
}

// epochOf is the chain epoch authenticate read with the request's key, for the
// request's chain reads (intake.epoch); nil when it read none.
func epochOf(c *gin.Context) *uint64 {
	if v, ok := c.Get(epochKey); ok {
		e := v.(uint64)
		return &e
	}
	return nil
}

// cacheGroupOf is the cache group of a database key's responses: the group an admin
// put it in, else the key alone. Without keys every request is in the group "" (one
// user, or one trusted loopback).
func cacheGroupOf(k *storage.Key) string {
	if k.CacheGroup != "" {
		return "group:" + k.CacheGroup
	}
	return "key:" + k.ID
}

// stillValid re-checks a database key for a connection that outlives its upgrade
// request (a WebSocket): a key revoked since must stop working there too.
func (s *Server) stillValid(ctx context.Context, cl caller) error {
	if cl.hash == "" || s.dbKeys.db == nil {
		return nil
	}
	k, err := s.dbKeys.db.KeyByHash(ctx, cl.hash)
	switch {
	case errors.Is(err, storage.ErrKeyNotFound):
		return hearth.InvalidAPIKey("This API key no longer exists.")
	case err != nil:
		return fmt.Errorf("re-check key: %w", err)
	case !k.Active():
		return hearth.InvalidAPIKey("This API key was revoked.")
	}
	return nil
}

// errAdminOnly is the 403 of a user key on an admin route.
func errAdminOnly(what string) error {
	return &hearth.Error{Status: http.StatusForbidden, Type: hearth.ErrTypeInvalidRequest, Code: "permission_denied",
		Message: what + " needs an admin key; this key is a user key (hearth keys create --name NAME --admin makes one)."}
}

// requireAdmin guards routes only admins may use.
func (s middleware) requireAdmin(c *gin.Context) {
	if !callerOf(c).admin() {
		s.writeError(c, errAdminOnly(c.Request.Method+" "+c.FullPath()))
	}
}

// userPassthrough is what a user key may call of the runtime's own API: generate and
// read the model list, as on hearth's own routes. Everything else there (pull, push,
// create, copy, delete, blobs, the ollama.com account routes, and whatever a later
// runtime adds) changes the shared models or reaches other hosts, and is admin-only.
var userPassthrough = map[string]bool{
	"GET /api/version": true, "HEAD /api/version": true,
	"GET /api/tags": true, "HEAD /api/tags": true, "GET /api/ps": true,
	"POST /api/show": true, "POST /api/generate": true, "POST /api/chat": true,
	"POST /api/embed": true, "POST /api/embeddings": true,
	"POST /v1/completions": true, "POST /v1/embeddings": true,
}

// passthroughAccess refuses a user key what userPassthrough does not list.
func (s middleware) passthroughAccess(c *gin.Context) {
	if callerOf(c).admin() {
		return
	}
	if !userPassthrough[c.Request.Method+" "+c.Request.URL.Path] {
		s.writeError(c, errAdminOnly(c.Request.Method+" "+textcap.Cut(c.Request.URL.Path, 200)))
	}
}

func owner(c *gin.Context) string { return c.GetString(ownerKey) }

// keylessForAdmin lets an admin key reach, by id, what was made while hearth required
// no key (storage.KeylessOwner): once the first key exists no request is that owner
// any more, and without this nobody could read, manage or delete those records until
// `hearth keys adopt` gives them to a key. The request then acts as their owner, so
// the handler reads, changes and deletes them as their maker would. Only the routes
// naming one record by id: lists stay the key's own, and a new record (a response
// continuing a keyless one, a vector store of keyless files) needs them adopted first.
func (s middleware) keylessForAdmin(c *gin.Context) {
	id := c.Param("id")
	if id == "" || callerOf(c).role != storage.RoleAdmin {
		return
	}
	ctx := c.Request.Context()
	var err error
	switch p := c.FullPath(); {
	case strings.HasPrefix(p, "/v1/responses/:id"):
		_, err = s.db.GetResponse(ctx, storage.KeylessOwner, id)
	case strings.HasPrefix(p, "/v1/conversations/:id"):
		_, err = s.db.GetConversation(ctx, storage.KeylessOwner, id)
	case strings.HasPrefix(p, "/v1/files/:id"):
		_, err = s.db.GetFile(ctx, storage.KeylessOwner, id)
	case strings.HasPrefix(p, "/v1/vector_stores/:id"):
		_, err = s.db.GetVectorStore(ctx, storage.KeylessOwner, id)
	default:
		return
	}
	// Any error (not found, or a store fault the handler meets again and reports)
	// leaves the request the key's own.
	if err == nil {
		c.Set(ownerKey, storage.KeylessOwner)
	}
}
