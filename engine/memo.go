package engine

import (
	"context"
	"maps"
)

// Kept builds. A turn that continues a chain builds its conversation from the whole
// chain: at turn 1,000 some 2,000 items become messages, and the renderer hashes every
// message to find the prompt it kept of the previous turn (engine/ollama/incremental.go),
// a few hundred microseconds that grow with the chain although only the last turn's
// items are new. So a job keeps what it built (Job.Memo): the messages of its history
// and input, the assistant message still open after them, and the renderer's own state
// (Conversation.Rendered). The server hands it to the chain's next turn (WithMemo),
// whose build goes on from it over the new items alone, and whose renderer compares
// rather than hashes the messages it kept. A memo is only a help: a turn without one,
// or whose request differs from the kept one in what the build depends on (the
// instructions, the tools' names), builds the whole conversation, with the same result
// (TestMemoBuildsTheSame).

// Memo is what one prepared job keeps for the next turn of its chain; nil when it
// keeps nothing. It is read-only once made and may be handed to any number of
// continuations.
type Memo struct {
	build *buildState
	// rendered is the renderer's state after rendering the job's prompt.
	rendered any
}

// buildState is convBuilder's state after a conversation's history and input,
// before the last message is closed.
type buildState struct {
	instructions string
	modelNames   map[ToolRef]string
	// items is how many items were added (history and input).
	items int
	// messages are the closed messages, in an array later messages are appended to
	// (never changed below len(messages); what the job changed in place afterwards,
	// e.g. a thinking switch, is in original). pending is a copy of the open
	// assistant message, nil when none.
	messages []Message
	original map[int]Message
	pending  *Message
}

// state is b's state after items items, before the final flush.
func (b *convBuilder) state(instructions string, items int) *buildState {
	if len(b.conv.Images) > 0 {
		return nil // images are numbered across the conversation; not worth it
	}
	st := &buildState{instructions: instructions, modelNames: b.conv.modelNames, items: items,
		messages: b.conv.Messages[:len(b.conv.Messages):len(b.conv.Messages)]}
	if b.pending != nil {
		p := *b.pending
		p.ToolCalls = p.ToolCalls[:len(p.ToolCalls):len(p.ToolCalls)]
		st.pending = &p
	}
	return st
}

// fits reports whether a build with these instructions and tools (conv's) over a
// history of n items may go on from st.
func (st *buildState) fits(instructions string, conv *Conversation, n int) bool {
	return st != nil && st.items <= n && st.instructions == instructions && maps.Equal(st.modelNames, conv.modelNames)
}

// resume starts b from st, with room for more items.
func (b *convBuilder) resume(st *buildState, more int) {
	msgs := make([]Message, len(st.messages), len(st.messages)+more+1)
	copy(msgs, st.messages)
	for i, m := range st.original {
		msgs[i] = m
	}
	b.conv.Messages = msgs
	if st.pending != nil {
		p := *st.pending
		b.pending = &p // its ToolCalls are full: an append copies them
	}
}

// touch records message i's value before the job changes it in place, so that a
// kept build (which shares the array) still reads what the build made.
func (c *Conversation) touch(i int) {
	if c.built == nil || i >= len(c.built.messages) {
		return
	}
	if c.built.original == nil {
		c.built.original = map[int]Message{}
	}
	if _, ok := c.built.original[i]; !ok {
		c.built.original[i] = c.Messages[i]
	}
}

type memoKey struct{}

// WithMemo makes m, kept by the previous turn of a chain, available to the Prepare
// that ctx is passed to.
func WithMemo(ctx context.Context, m *Memo) context.Context {
	if m == nil {
		return ctx
	}
	return context.WithValue(ctx, memoKey{}, m)
}

func memoFrom(ctx context.Context) *Memo {
	m, _ := ctx.Value(memoKey{}).(*Memo)
	return m
}

// Memo is what the job keeps for its chain's next turn; nil when it keeps nothing
// (its conversation was not the chain's, e.g. MCP tools changed it).
func (j *Job) Memo() *Memo {
	if j.conv == nil || j.conv.built == nil {
		return nil
	}
	return &Memo{build: j.conv.built, rendered: j.conv.Rendered}
}
