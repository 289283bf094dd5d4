package engine

import (
	"maps"
	"sync/atomic"
)

// Kept builds. A turn that continues a chain builds its conversation from the whole
// chain: at turn 1,000 some 2,000 items become messages, and the renderer hashes every
// message to find the prompt it kept of the previous turn (engine/ollama/incremental.go),
// a few hundred microseconds that grow with the chain although only the last turn's
// items are new. So a job keeps what it built (Job.Memo): the messages of its history
// and input, the assistant message still open after them, and the renderer's own state
// (Conversation.Rendered). The server hands it to the chain's next turn (Inputs.Memo),
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
//
// Its messages are shared, like a kept chain's items (server/hotchains.go): no one
// writes messages[:len(messages)] again (a job that would change one in place copies
// the array first: Conversation.writable), and the first continuation to claim
// extended appends its own messages in place after them; another copies. So a
// linear chain's turns build into one array, each turn adding its own messages.
type buildState struct {
	instructions string
	modelNames   map[ToolRef]string
	// items is how many items were added (history and input).
	items    int
	messages []Message
	extended atomic.Bool
	// pending is a copy of the open assistant message, nil when none.
	pending *Message
}

// state is b's state after items items, before the final flush.
func (b *convBuilder) state(instructions string, items int) *buildState {
	if len(b.conv.Images) > 0 {
		return nil // images are numbered across the conversation; not worth it
	}
	st := &buildState{instructions: instructions, modelNames: b.conv.modelNames, items: items, messages: b.conv.Messages}
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

// resume starts b from st, with room for more items: in st's array when b is the
// first to extend it and it has the room; else in a copy, with room for the turns
// after it when b was the first (its array was full), and a little otherwise (a
// branch, which may well not be continued).
func (b *convBuilder) resume(st *buildState, more int) {
	n := len(st.messages)
	first := st.extended.CompareAndSwap(false, true)
	switch {
	case first && cap(st.messages)-n > more:
		b.conv.Messages = st.messages
	case first:
		b.conv.Messages = make([]Message, n, 2*(n+more+1))
		copy(b.conv.Messages, st.messages)
	default:
		b.conv.Messages = make([]Message, n, n+more+1+branchRoom)
		copy(b.conv.Messages, st.messages)
	}
	b.conv.frozen = n
	if st.pending != nil {
		p := *st.pending
		b.pending = &p // its ToolCalls are full: an append copies them
	}
}

// keep makes the conversation's messages so far the kept build's: no longer written
// in place.
func (c *Conversation) keep(st *buildState) {
	c.built = st
	c.frozen = len(st.messages)
}

// writable makes message i safe to change in place: a message a kept build shares
// is first copied, with the whole array.
func (c *Conversation) writable(i int) {
	if i < c.frozen {
		c.Messages = append(make([]Message, 0, cap(c.Messages)), c.Messages...)
		c.frozen = 0
	}
}

// stable is how many of the conversation's first messages will never change, for the
// renderer's kept keys (Conversation.Stable).
func (c *Conversation) stable() int {
	if c.frozen > 0 {
		// The array goes on past them with another turn's messages.
		return c.frozen
	}
	return len(c.Messages)
}

// branchRoom is the room for more messages a branch's copy gets.
const branchRoom = 16

// Memo is what the job keeps for its chain's next turn; nil when it keeps nothing
// (its conversation was not the chain's, e.g. MCP tools changed it).
func (j *Job) Memo() *Memo {
	if j.conv == nil || j.conv.built == nil {
		return nil
	}
	return &Memo{build: j.conv.built, rendered: j.conv.Rendered}
}
