package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"hearth"
	"hearth/internal/seal"
)

// CodeInvalidEncryptedContent: an encrypted_content hearth cannot open (altered,
// truncated, sealed under another server's key, or not hearth's at all).
const CodeInvalidEncryptedContent = "invalid_encrypted_content"

// CompactionPreamble introduces a compaction item's summary where the prompt shows it.
const CompactionPreamble = "Summary of the conversation so far:\n\n"

// sealedReasoning is the payload of a reasoning item's encrypted_content: what the
// prompt needs to show the model its earlier thinking again, and nothing else.
type sealedReasoning struct {
	Text string `json:"text"`
}

// sealedCompaction is the payload of a compaction item's encrypted_content.
type sealedCompaction struct {
	Summary string `json:"summary"`
	// Whole marks the item of a server-side compaction, which stands for the whole
	// conversation before it: Kept are the items compaction kept as they were
	// (system and developer messages, the last user message), so that the item
	// alone, without anything before it, continues the conversation.
	Whole bool          `json:"whole,omitempty"`
	Kept  []hearth.Item `json:"kept,omitempty"`
}

// sealReasoning is the encrypted_content of reasoning item it: its reasoning text as
// the prompt renders it (reasoningText), so that the item sent back alone, without
// content or summary, renders exactly as the stored item would.
func (e *Engine) sealReasoning(it hearth.Item) string {
	p, _ := json.Marshal(sealedReasoning{Text: reasoningText(&it)})
	return e.Seal.Seal(seal.Reasoning, p)
}

func (e *Engine) sealCompaction(p sealedCompaction) string {
	b, _ := json.Marshal(p)
	return e.Seal.Seal(seal.Compaction, b)
}

// openCompaction is the payload of a compaction item hearth sealed, or false when it
// cannot be opened (openSealed then says why).
func (e *Engine) openCompaction(it *hearth.Item) (sealedCompaction, bool) {
	var p sealedCompaction
	if e.Seal == nil || it.EncryptedContent == "" {
		return p, false
	}
	b, err := e.Seal.Open(seal.Compaction, it.EncryptedContent)
	return p, err == nil && json.Unmarshal(b, &p) == nil
}

// openSealed returns history and input with hearth's sealed content restored, for
// BuildConversation: a reasoning item carrying encrypted_content gets its reasoning
// text back as its content, and a compaction item becomes the user message its summary
// is shown as. The caller's items are not changed (stored input stays as sent).
//
// Every blob in the request's own input is opened, so an altered or foreign one is a
// 400 even when the item carries content too; the sealed text then wins, being the
// model's own. Stored items (history) are opened only when nothing else gives their
// text: a stored output item has its content, and a chain kept on the server must not
// break because the key changed.
func (e *Engine) openSealed(history, input []hearth.Item) ([]hearth.Item, []hearth.Item, error) {
	return e.openSealedFrom(history, input, 0)
}

// openSealedFrom is openSealed for a history whose first plain items are known to
// hold nothing sealed (a kept build's, memo.go).
func (e *Engine) openSealedFrom(history, input []hearth.Item, plain int) ([]hearth.Item, []hearth.Item, error) {
	openAll := func(items []hearth.Item, stored bool, from int) ([]hearth.Item, error) {
		var out []hearth.Item
		for i := from; i < len(items); i++ {
			it := &items[i]
			sealed := it.Type == hearth.ItemCompaction ||
				(it.Type == hearth.ItemReasoning && it.EncryptedContent != "" && (!stored || len(it.Content) == 0))
			if !sealed {
				continue
			}
			if out == nil {
				out = append([]hearth.Item(nil), items...)
			}
			opened, err := e.openItem(*it)
			if err != nil {
				if !stored {
					return nil, unopenable(fmt.Sprintf("input[%d].encrypted_content", i), err)
				}
				return nil, hearth.InvalidRequest("previous_response_id", CodeInvalidEncryptedContent,
					fmt.Sprintf("Invalid item %d of the previous response chain: hearth cannot open this encrypted content: %v.", i, err))
			}
			out[i] = opened
		}
		if out == nil {
			return items, nil
		}
		return out, nil
	}
	h, err := openAll(history, true, plain)
	if err != nil {
		return nil, nil, err
	}
	in, err := openAll(input, false, 0)
	if err != nil {
		return nil, nil, err
	}
	return h, in, nil
}

// CheckSealed refuses items a client stores for later turns (a conversation's items,
// path names them, e.g. "items") whose sealed content hearth cannot open, as
// openSealed refuses them in a request's input. Stored, such an item would fail every
// later turn of the conversation with an error about history the client never sent.
func (e *Engine) CheckSealed(items []hearth.Item, path string) error {
	for i := range items {
		it := &items[i]
		if it.Type != hearth.ItemCompaction && (it.Type != hearth.ItemReasoning || it.EncryptedContent == "") {
			continue
		}
		if _, err := e.openItem(*it); err != nil {
			return unopenable(fmt.Sprintf("%s[%d].encrypted_content", path, i), err)
		}
	}
	return nil
}

// unopenable is the 400 for a client's encrypted_content (at param) hearth cannot open.
func unopenable(param string, err error) error {
	return hearth.InvalidRequest(param, CodeInvalidEncryptedContent,
		fmt.Sprintf("Invalid '%s': hearth cannot open this encrypted content: %v.", param, err))
}

// openItem returns the item a sealed reasoning or compaction item stands for.
func (e *Engine) openItem(it hearth.Item) (hearth.Item, error) {
	kind := seal.Reasoning
	if it.Type == hearth.ItemCompaction {
		kind = seal.Compaction
	}
	key := openedKey{e.Seal, it.EncryptedContent}
	if kind == seal.Reasoning && e.Seal != nil {
		if text, ok := opened.get(key); ok {
			return openedReasoning(it, text), nil
		}
	}
	plain, err := e.Seal.Open(kind, it.EncryptedContent)
	if err != nil {
		return hearth.Item{}, err
	}
	if kind == seal.Compaction {
		var p sealedCompaction
		if err := json.Unmarshal(plain, &p); err != nil {
			return hearth.Item{}, errors.New("its payload is not a compaction summary")
		}
		return compactionMessage(it.ID, p.Summary), nil
	}
	var p sealedReasoning
	if err := json.Unmarshal(plain, &p); err != nil {
		return hearth.Item{}, errors.New("its payload is not reasoning")
	}
	opened.put(key, p.Text)
	return openedReasoning(it, p.Text), nil
}

// openedReasoning is reasoning item it with its sealed text as its content.
func openedReasoning(it hearth.Item, text string) hearth.Item {
	it = it.Clone()
	it.Content = []hearth.ContentPart{{Type: hearth.PartReasoningText, Text: text}}
	it.EncryptedContent = ""
	return it
}

// compactionMessage is how a compaction summary enters the prompt: a user message, the
// one role every chat template renders anywhere in a conversation.
func compactionMessage(id, summary string) hearth.Item {
	return hearth.Item{Type: hearth.ItemMessage, ID: id, Role: hearth.RoleUser,
		Content: []hearth.ContentPart{{Type: hearth.PartInputText, Text: CompactionPreamble + summary}}}
}
