package respond

import (
	"hearth"
	"hearth/engine"
)

// LocalChain is a WebSocket lane's latest response with the whole conversation it
// ends (its history, its input, its output): the chain a create naming it continues
// without storage (a store: false response has none), and the items its item
// references may name.
type LocalChain struct {
	id    string
	items []hearth.Item
	// kept is the response's chain as hearth keeps it for any continuation (hot
	// chains), which items then are not: the lane shares it.
	kept *hotChain
	// memo is what the response's job built, for the next create's build
	// (engine.Memo); nil when it kept nothing.
	memo *engine.Memo
}

// ID is the response's id.
func (st *LocalChain) ID() string { return st.id }

// nextLocalChain is a lane's state once final, prepared as p and run as r, ended: the
// chain kept for its next turn when it was (the lane shares it), else the chain it
// continued, with its input and output.
func nextLocalChain(p *prepared, r *run, final *hearth.Response) *LocalChain {
	if r.kept != nil {
		return &LocalChain{id: final.ID, kept: r.kept, memo: r.kept.memo}
	}
	// The lane's own items grow in place; a kept chain's are shared (hotChains) and
	// copied once.
	history := p.chain.items
	items := history
	if !p.chain.local {
		items = make([]hearth.Item, len(history), 2*(len(history)+len(p.req.Input)+len(final.Output)))
		copy(items, history)
	}
	items = append(append(items, p.req.Input...), final.Output...)
	var memo *engine.Memo
	if !p.chain.noMemo { // a build of the chain alone
		memo = p.job.Memo()
	}
	return &LocalChain{id: final.ID, items: items, memo: memo}
}

// history is the items of the lane's latest conversation. The caller must not change
// the items; the lane appends its next ones in place.
func (st *LocalChain) history() []hearth.Item {
	if st.kept != nil {
		return st.kept.history()
	}
	return st.items
}

// EventPath is the path a streamed response's events take to sink, without a
// response or a runtime: emit as the builder's events (held terminal events
// included), then finish as the run ends. It exists so that a front door's framing can
// be fuzzed over a real connection (FuzzWebSocketFrame).
func EventPath(sink Sink) (emit func(hearth.Event), finish func()) {
	r := &run{}
	return r.observe(r.emitTo(sink)), func() { r.finish(sink) }
}
