package server

import (
	"context"
	"slices"

	"hearth"
	"hearth/engine"
	"hearth/vectorstores"
)

// The request path. Every way of making a response goes through the same steps, in
// the same order, whatever carries it: POST /v1/responses (a JSON reply, an SSE
// stream, a background response, a turn of a conversation), a WebSocket
// response.create (socket.go), and POST /v1/responses/compact (compact.go).
//
//  1. Decoding, validation and limits: readRequest (HTTP) or decodeRequest (a
//     socket's message), both decodeRequest at heart.
//  2. The prologue, prepare: the chain behind previous_response_id (chainHistory: a
//     hot chain, a WebSocket connection's own state, or a load from storage with its
//     checkpoint depth and saved prompt), item references, the conversation turn,
//     the hosted tools' items' access, the placement on a runtime, and the engine's job.
//  3. Admission and the stored record: start (responses.go).
//  4. The lifecycle: run.builder and run.execute (responses.go) generate, journal,
//     store, keep the chain hot and report the response; its events leave through an
//     eventSink (an SSE stream, a WebSocket connection) or, for a JSON reply and a
//     background response, go to the journal alone.
//
// The transports differ only in what they hand prepare (intake) and in where the
// events go. A compaction runs the same prologue and admission; its lifecycle is
// run.compact, since it answers with a compacted window and stores nothing.

// intake is what a transport knows of a request besides its body.
type intake struct {
	meta *reqMeta
	// who owns the response (owner).
	who string
	// epoch is the chain epoch read with the request's key (epochOf), from which its
	// chain reads start; nil: they read it. A WebSocket's creates read their own,
	// each later than the connection's key.
	epoch *uint64
	// local is the latest response of a WebSocket connection, whose chain the
	// connection keeps even where storage has none (store: false); nil over HTTP.
	local *socketState
	// runtime is where the response goes when nothing else places it (place): the
	// runtime of the connection's latest response.
	runtime string
	// compaction prepares a summarising generation (engine.PrepareCompaction) rather
	// than a response: it continues no conversation and keeps nothing of the chain.
	compaction bool
}

// prepared is a request through the prologue: everything its response needs before
// admission. close releases what the prologue holds (its placement's reservation,
// its conversation unless a run took it over).
type prepared struct {
	req *hearth.CreateResponseRequest
	// ctx carries what the engine reads of the request (the kept build, the saved
	// prompt, the caller, the placement).
	ctx   context.Context
	chain chainRead
	turn  *conversationTurn
	// job is the response's generation; compaction a compaction's.
	job        *engine.Job
	compaction *engine.Compaction
	unplace    func()
}

func (p *prepared) close() {
	if p.unplace != nil {
		p.unplace()
	}
	p.turn.abandon()
}

// prepare runs the prologue on a decoded request. On error it has released what it
// took; otherwise the caller closes the result once the response is started (or
// failed to start).
func (s *Server) prepare(ctx context.Context, in intake, req *hearth.CreateResponseRequest) (*prepared, error) {
	p := &prepared{req: req}
	chain, err := s.chainHistory(ctx, in.who, req.PreviousResponseID, in.local, in.epoch, !in.compaction)
	if err == nil {
		var local []hearth.Item
		if in.local != nil {
			local = in.local.history()
		}
		err = s.resolveReferences(ctx, in.who, req.Input, local)
	}
	if err == nil {
		err = s.vectorStores.ResolveFiles(ctx, in.who, req.Input, "input")
	}
	if err != nil {
		return nil, err
	}
	if !in.compaction {
		// What the chain's previous turn built, or the prompt saved with its
		// checkpoint: the build then goes on from there instead of starting over.
		if chain.saved != nil {
			ctx = engine.WithSavedPrompt(ctx, *chain.saved)
		}
		ctx = engine.WithMemo(ctx, chain.memo)
		if p.turn, err = s.beginConversationTurn(ctx, in.who, req); err != nil {
			return nil, err
		}
	}
	if err := s.checkHostedItems(in.meta.key, chain.items, p.turn.history(), req.Input); err != nil {
		p.close()
		return nil, err
	}
	history := chain.items
	if !in.compaction {
		// The approval requests the response issues are this caller's alone.
		ctx = engine.WithCaller(ctx, in.who)
		if more := p.turn.history(); len(more) > 0 {
			// The chain stays what storage would load for previous_response_id; the
			// job's build then holds more than the chain: not for the next turn.
			history = append(slices.Clip(history), more...)
			chain.noMemo = true
		}
	}
	ctx, p.unplace = s.place(ctx, in.who, req, in.runtime)
	if in.compaction {
		p.compaction, err = s.engine.PrepareCompaction(ctx, req, history)
	} else {
		p.job, err = s.engine.Prepare(ctx, req, history)
	}
	if err != nil {
		p.close()
		return nil, vectorstores.FileTooLong(err, req.Input)
	}
	p.ctx, p.chain = ctx, chain
	return p, nil
}
