package server

import (
	"context"

	"hearth"
	"hearth/engine/pool"
)

// HeaderRuntime names the runtime that served a response (engine/pool's label:
// "embedded" or host:port), so a client or an operator sees where a chain lives.
const HeaderRuntime = "x-hearth-runtime"

// place chooses the runtime a response runs on with the pool's placement policy
// (engine/pool/placement.go): the runtime of its chain (previous_response_id's
// response, else the latest of the owner's prompt_cache_key, else fallback: a
// WebSocket's latest response) while it serves the model, else the least loaded. The
// choice is reserved in admission until the request enters it (admitAs) or the
// placement is released, whichever comes first.
func (s *Server) place(ctx context.Context, who string, req *hearth.CreateResponseRequest, fallback string) pool.Placed {
	return s.placement.Place(pool.Want{Model: req.Model, Owner: who, CacheKey: req.PromptCacheKey, Fallback: fallback,
		Parent: func() string {
			if req.PreviousResponseID == "" || s.db == nil {
				return ""
			}
			l, _ := s.db.ResponseRuntime(ctx, who, req.PreviousResponseID)
			return l
		}})
}
