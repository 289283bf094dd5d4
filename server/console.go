package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/server/console"
	"hearth/storage"
	"hearth/telemetry"
)

// consoleWiring gives the web console (server/console) what it shows and checks:
// keys, live state, the hosted kinds' items.
type consoleWiring struct{ *Server }

// newConsole wires the web console to the server's keys, database, runtime and
// admission. It does its own authentication (a session cookie, not a bearer key per
// request); the boundary checks run before it like before every route.
func (s consoleWiring) newConsole() *console.Console {
	return console.New(console.Config{
		DB:           s.db,
		KeysRequired: s.keysRequired,
		CheckKey:     s.consoleKey,
		StillValid: func(ctx context.Context, hash string) error {
			return s.stillValid(ctx, caller{hash: hash})
		},
		KeyNames:   s.keyNames,
		Live:       s.liveState,
		HostedView: s.hostedView,
		Logger:     s.log,
	})
}

// hostedView is how the console shows an item of a hosted tool kind: as the kind
// says (engine.HostedViewer).
func (s consoleWiring) hostedView(it hearth.Item) (console.HostedItem, bool) {
	k, ok := s.core.HostedKindOf(it.Type)
	if !ok {
		return console.HostedItem{}, false
	}
	viewer, ok := k.(engine.HostedViewer)
	if !ok {
		return console.HostedItem{}, false
	}
	v := viewer.View(it)
	return console.HostedItem{Kind: k.ToolType(), Name: v.Name, Args: v.Args, Text: v.Text}, true
}

func (s consoleWiring) serveConsole(c *gin.Context) { s.console.ServeHTTP(c.Writer, c.Request) }

// keysRequired is authenticate's rule: configured keys, or any key in the database.
func (s consoleWiring) keysRequired(ctx context.Context) (bool, error) {
	if s.keys.enabled() || s.dbKeys.seen.Load() {
		return true, nil
	}
	if s.dbKeys.db == nil {
		return false, nil
	}
	has, err := s.dbKeys.db.HasKeys(ctx)
	if has {
		s.dbKeys.seen.Store(true)
	}
	return has, err
}

// consoleKey checks a key typed into the console's login form as authenticate checks
// a bearer key.
func (s consoleWiring) consoleKey(ctx context.Context, key string) (console.Key, error) {
	if i := s.keys.find(key); i > 0 {
		return console.Key{Name: fmt.Sprintf("config-%d", i), Admin: true}, nil
	}
	if s.dbKeys.db == nil {
		return console.Key{}, console.ErrBadKey
	}
	k, err := s.dbKeys.db.KeyByHash(ctx, storage.OwnerOf(key))
	switch {
	case errors.Is(err, storage.ErrKeyNotFound):
		return console.Key{}, console.ErrBadKey
	case err != nil:
		return console.Key{}, err
	case !k.Active():
		return console.Key{}, console.ErrBadKey
	}
	return console.Key{Name: k.Name, Admin: k.Role == storage.RoleAdmin, Hash: k.Hash}, nil
}

// keyNames names owners: database keys by name, configured keys by position, and the
// owner of responses made without a key.
func (s consoleWiring) keyNames(ctx context.Context) (map[string]string, error) {
	names := map[string]string{storage.OwnerOf(""): "anonymous"}
	for i, sum := range s.keys.sums {
		names[fmt.Sprintf("%x", sum)] = fmt.Sprintf("config-%d", i+1)
	}
	if s.db != nil {
		keys, err := s.db.ListKeys(ctx)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			names[k.Hash] = k.Name
		}
	}
	return names, nil
}

// liveState is what runs now: the runtime's loaded models (its /api/ps), each model's
// slots and queue, and recent speeds.
func (s consoleWiring) liveState(ctx context.Context) console.Live {
	cfg := s.admission.Config()
	l := console.Live{Slots: cfg.Slots, MaxQueue: cfg.MaxQueue, Speeds: s.recent.Snapshot()}
	rt := console.Runtime{Name: "ollama (external)", Embedded: s.rt.IsEmbedded(), Up: true}
	if s.rt.IsEmbedded() {
		rt.Name = "ollama (in hearth)"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	loaded, err := s.rt.Loaded(ctx)
	if err != nil {
		rt.Up, rt.Error = false, "The runtime did not answer: "+err.Error()
	} else {
		for _, m := range loaded {
			rt.Models = append(rt.Models, console.LoadedModel{Name: m.Name, Size: m.Size, VRAM: m.VRAM,
				ContextLength: m.ContextLength, ExpiresAt: m.ExpiresAt})
		}
	}
	l.Runtimes = []console.Runtime{rt}
	for _, lane := range s.admission.Snapshot() {
		// Admission opens a lane for whatever name a request sends, before the
		// runtime says whether it has that model: a name it does not have (a typo,
		// answered model_not_found) is no model to show slots of.
		if s.models.Label(lane.Model) == telemetry.UnknownModel {
			continue
		}
		l.Lanes = append(l.Lanes, console.Lane{Model: lane.Model, Running: lane.Running, Waiting: lane.Waiting})
	}
	return l
}
