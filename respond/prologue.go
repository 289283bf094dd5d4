package respond

import (
	"context"
	"slices"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
)

// The request path. Every way of making a response goes through the same steps, in
// the same order, whatever carries it: POST /v1/responses (a JSON reply, an SSE
// stream, a background response, a turn of a conversation), a WebSocket
// response.create, and POST /v1/responses/compact (compact.go).
//
//  1. Decoding, validation and limits, in the front door (server's decodeRequest),
//     which hands the core a Request (Create, Compact).
//  2. The prologue, prepare: the model name through the aliases (ResolveModel), the
//     chain behind previous_response_id (chainHistory: a
//     hot chain, a WebSocket connection's own state, or a load from storage with its
//     checkpoint depth and saved prompt), item references, the conversation turn,
//     the hosted tools' items' access, the placement on a runtime, and the engine's job.
//  3. Admission and the stored record: start (create.go).
//  4. The lifecycle: run.builder and run.execute (create.go) generate, journal,
//     store, keep the chain hot and report the response; its events leave through a
//     Sink (an SSE stream, a WebSocket lane) or, for a JSON reply and a background
//     response, go to the journal alone.
//
// The transports differ only in what they hand the core (Request) and in where the
// events go. A compaction runs the same prologue and admission; its lifecycle is
// run.compact, since it answers with a compacted window and stores nothing.

// prepared is a request through the prologue: everything its response needs before
// admission. close releases what the prologue holds (its placement's reservation,
// its conversation unless a run took it over).
type prepared struct {
	req *hearth.CreateResponseRequest
	// ctx is the request's context (cancellation and deadline only: the engine's
	// inputs went to it as engine.Inputs).
	ctx   context.Context
	chain chainRead
	turn  *conversationTurn
	// job is the response's generation; compaction a compaction's.
	job        *engine.Job
	compaction *engine.Compaction
	// place is the response's placement on a runtime, reserved until admission.
	place pool.Placed
}

func (p *prepared) close() {
	p.place.Release()
	p.turn.abandon()
}

// prepare runs the prologue on a decoded request. On error it has released what it
// took; otherwise the caller closes the result once the response is started (or
// failed to start).
func (s *Service) prepare(ctx context.Context, in *Request, compaction bool) (*prepared, error) {
	req := in.Body
	if _, ok := s.ResolveModel(req); ok && in.Meta.Log != nil {
		// The log lines already name the model the client sent; they add the one
		// that runs.
		in.Meta.Log = in.Meta.Log.With("resolved_model", req.Model)
		in.Meta.Resolved = req.Model
	}
	p := &prepared{req: req}
	chain, err := s.loadChain(ctx, in, compaction)
	if err == nil {
		var local []hearth.Item
		if in.Local != nil {
			local = in.Local.history()
		}
		err = s.resolveReferences(ctx, in.Owner, req.Input, local)
	}
	if err == nil && s.files != nil {
		err = s.files.ResolveFiles(ctx, in.Owner, req.Input, "input")
	}
	if err != nil {
		return nil, err
	}
	inputs := engine.Inputs{CacheGroup: in.Meta.CacheGroup}
	if !compaction {
		// What the chain's previous turn built, or the prompt saved with its
		// checkpoint: the build then goes on from there instead of starting over.
		inputs.Saved, inputs.Memo = chain.saved, chain.memo
		if p.turn, err = s.beginConversationTurn(ctx, in.Owner, req); err != nil {
			return nil, err
		}
	}
	if err := s.checkHostedItems(in.Meta.Key, chain.items, p.turn.history(), req.Input); err != nil {
		p.close()
		return nil, err
	}
	history := chain.items
	if !compaction {
		// The approval requests the response issues are this caller's alone.
		inputs.Caller = in.Owner
		if more := p.turn.history(); len(more) > 0 {
			// The chain stays what storage would load for previous_response_id; the
			// job's build then holds more than the chain: not for the next turn.
			history = append(slices.Clip(history), more...)
			chain.noMemo = true
		}
	}
	p.place = s.admitter.Place(ctx, in.Owner, req, in.Runtime)
	inputs.Placement = p.place.Placement
	if compaction {
		p.compaction, err = s.engine.PrepareCompaction(ctx, req, history, inputs)
	} else {
		p.job, err = s.engine.Prepare(ctx, req, history, inputs)
	}
	if err != nil {
		p.close()
		if s.files != nil {
			err = s.files.TooLong(err, req.Input)
		}
		return nil, err
	}
	p.ctx, p.chain = ctx, chain
	return p, nil
}

// ResolveModel serves req under the model its name is an alias of (engine.Aliases):
// req.Model becomes that model, from is the name the client sent. Everything after the
// prologue (placement, admission, the engine, metrics, the stored response) sees the
// model that runs, and the response reports it, as OpenAI's and Anthropic's APIs
// report the snapshot an alias they serve resolved to. A door that reads the model
// before the prologue (to count tokens) calls it itself; resolving twice is harmless,
// since no alias's model is sent elsewhere by another (engine.NewAliases).
func (s *Service) ResolveModel(req *hearth.CreateResponseRequest) (from string, ok bool) {
	if s.engine == nil {
		return req.Model, false
	}
	to, ok := s.engine.Aliases.Resolve(req.Model)
	if !ok || to == req.Model {
		return req.Model, false
	}
	from, req.Model = req.Model, to
	return from, true
}
