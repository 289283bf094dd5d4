package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"

	"hearth"
	"hearth/storage"
)

// changes is what the server does with the changes of the store the core does not act
// on itself (respond.Service.OnChange): a key revoked anywhere (on this replica or any
// other) closes the WebSockets that use it.
type changes struct {
	mu sync.Mutex
	// sockets are the open WebSocket connections, checked again when keys change.
	sockets map[*socket]struct{}
	// recheck asks recheckKeys for one more round; it holds at most one request.
	recheck chan struct{}
}

func newChanges() *changes {
	return &changes{sockets: map[*socket]struct{}{}, recheck: make(chan struct{}, 1)}
}

// heard acts on one change; it runs on the store's goroutine and must not block.
func (ch *changes) heard(c storage.Change) {
	switch c.Kind {
	case storage.KeysChanged, storage.ChangesLost:
		ch.askRecheck()
	}
}

func (ch *changes) askRecheck() {
	select {
	case ch.recheck <- struct{}{}:
	default:
	}
}

// addSocket registers an open WebSocket connection until remove is called.
func (ch *changes) addSocket(sk *socket) (remove func()) {
	ch.mu.Lock()
	ch.sockets[sk] = struct{}{}
	ch.mu.Unlock()
	return func() {
		ch.mu.Lock()
		delete(ch.sockets, sk)
		ch.mu.Unlock()
	}
}

// recheckKeys checks the keys of the open WebSockets again each time keys change:
// a connection whose key was revoked (on this replica or any other) is sent the
// error an HTTP request with that key gets, and closed with 1008 (policy
// violation); the response in flight on it, if any, stops as for a client that went
// away. One look-up per distinct key, not per connection.
func (s *Server) recheckKeys() {
	for {
		select {
		case <-s.core.Stopping().Done():
			return
		case <-s.changes.recheck:
		}
		s.changes.mu.Lock()
		byHash := map[string][]*socket{}
		for sk := range s.changes.sockets {
			if sk.caller.hash != "" {
				byHash[sk.caller.hash] = append(byHash[sk.caller.hash], sk)
			}
		}
		s.changes.mu.Unlock()
		for _, sks := range byHash {
			ctx, cancel := context.WithTimeout(s.core.Stopping(), 10*time.Second)
			err := s.stillValid(ctx, sks[0].caller)
			cancel()
			var apiErr *hearth.Error
			if err == nil || !errors.As(err, &apiErr) {
				continue // valid, or the store could not say: the next create checks again
			}
			for _, sk := range sks {
				go sk.revoke(err)
			}
		}
	}
}

// revoke ends a connection whose key is no longer valid.
func (sk *socket) revoke(err error) {
	sk.s.log.Info("closing a WebSocket whose API key is no longer valid", "key", sk.base.Key)
	sk.sendError(err, "", "")
	sk.conn.Close(websocket.StatusPolicyViolation, "API key no longer valid")
}
