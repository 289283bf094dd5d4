package engine

import (
	"encoding/binary"
)

// Saved prompts. The runtime's renderer splices a continuation's prompt onto its
// parent's, kept in memory (engine/ollama/incremental.go); after a restart nothing is
// kept, and the first continuation of a 1,000-turn chain rendered all of it (tens of
// milliseconds). So a response's prompt is saved with its chain's checkpoint (storage)
// together with a digest that names what it was rendered from, in a form that holds
// across processes; the first continuation after a restart hands it back (Inputs.Saved),
// and the renderer splices onto it once the digest of the same number of the new
// conversation's messages matches.

// SavedPrompt is a prompt rendered earlier, possibly by another process: the
// rendering of a conversation's first Messages messages, whatever else it depends on
// (template, tools, think value) named by Digest.
type SavedPrompt struct {
	Prompt   string
	Messages int
	Digest   []byte
}

// PromptDigester is a PromptRenderer that can save prompts: PromptDigest names conv
// rendered with think by a digest that is stable across processes (false when conv
// cannot be spliced onto, e.g. it has images), and RenderPrompt splices onto
// conv.Resume when the digest of as many of conv's messages matches.
type PromptDigester interface {
	PromptDigest(conv *Conversation, think *Think) ([]byte, bool)
}

const savedPromptVersion = 1

// MarshalBinary encodes p for storage: a version byte, the uvarint message count, the
// uvarint-length-prefixed digest, then the prompt.
func (p SavedPrompt) MarshalBinary() []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(p.Digest)+len(p.Prompt))
	b = append(b, savedPromptVersion)
	b = binary.AppendUvarint(b, uint64(p.Messages))
	b = binary.AppendUvarint(b, uint64(len(p.Digest)))
	b = append(b, p.Digest...)
	return append(b, p.Prompt...)
}

// ParseSavedPrompt decodes what MarshalBinary encoded; false for anything else.
func ParseSavedPrompt(b []byte) (SavedPrompt, bool) {
	if len(b) == 0 || b[0] != savedPromptVersion {
		return SavedPrompt{}, false
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<31 {
		return SavedPrompt{}, false
	}
	b = b[k:]
	d, k := binary.Uvarint(b)
	if k <= 0 || d > uint64(len(b)-k) {
		return SavedPrompt{}, false
	}
	b = b[k:]
	return SavedPrompt{Messages: int(n), Digest: b[:d:d], Prompt: string(b[d:])}, true
}

// SavedPrompt is the job's prompt with its digest, for its chain's checkpoint; false
// when the model's renderer cannot save prompts or this conversation's.
func (j *Job) SavedPrompt() (SavedPrompt, bool) {
	if j.conv == nil {
		// Its compaction failed before the job had a conversation.
		return SavedPrompt{}, false
	}
	d, ok := j.Model.Info.Prompt.(PromptDigester)
	if !ok {
		return SavedPrompt{}, false
	}
	digest, ok := d.PromptDigest(j.conv, j.think)
	if !ok {
		return SavedPrompt{}, false
	}
	return SavedPrompt{Prompt: j.Prompt, Messages: len(j.conv.Messages), Digest: digest}, true
}
