package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
}

// sealReasoning is the encrypted_content of reasoning item it: its reasoning text as
// the prompt renders it (reasoningText), so that the item sent back alone, without
// content or summary, renders exactly as the stored item would.
func (e *Engine) sealReasoning(it hearth.Item) string {
	p, _ := json.Marshal(sealedReasoning{Text: reasoningText(&it)})
	return e.Seal.Seal(seal.Reasoning, p)
}

func (e *Engine) sealCompaction(summary string) string {
	p, _ := json.Marshal(sealedCompaction{Summary: summary})
	return e.Seal.Seal(seal.Compaction, p)
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
				param, what := "previous_response_id", fmt.Sprintf("item %d of the previous response chain", i)
				if !stored {
					param = fmt.Sprintf("input[%d].encrypted_content", i)
					what = "'" + param + "'"
				}
				return nil, hearth.InvalidRequest(param, CodeInvalidEncryptedContent,
					fmt.Sprintf("Invalid %s: hearth cannot open this encrypted content: %v.", what, err))
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

// callerKey carries the caller a response is for (WithCaller).
type callerKey struct{}

// WithCaller says who the response prepared with ctx is for: the server's storage
// owner of the API key (one value for every caller when no key is required). The
// mcp_approval_requests hearth issues are bound to it, and only the same caller may
// have them run.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

func callerFrom(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(string)
	return c
}

// An mcp_approval_request hearth issues carries its proof in its id, the one field
// every client sends back as it got it (a stateless client echoes the whole item; an
// mcp_approval_response names it): "mcpr_" + hex(nonce) + hex(tag), where the tag
// (seal.Key.Tag) binds the caller, the nonce, and the request's server_label, name and
// arguments. hearth then runs an approved call only for a request it issued to this
// caller, with exactly the arguments it issued, wherever the item came back from (the
// request's input, a stored chain, a conversation, an item reference), and never for
// one a client wrote, stored as its own input, or took from another key.
const approvalNonceSize = 16

// approvalID is the id of an mcp_approval_request issued to caller.
func (e *Engine) approvalID(caller string, it hearth.Item) string {
	var nonce [approvalNonceSize]byte
	rand.Read(nonce[:]) // never fails (crypto/rand doc, Go 1.24+)
	tag := e.Seal.Tag(seal.MCPApproval, approvalFields(caller, nonce[:], it)...)
	return hearth.PrefixMCPApprovalRequest + "_" + hex.EncodeToString(nonce[:]) + hex.EncodeToString(tag)
}

// approvalIssued reports whether hearth issued the mcp_approval_request it to caller,
// as it stands (approvalID).
func (e *Engine) approvalIssued(caller string, it hearth.Item) bool {
	if e.Seal == nil {
		return false
	}
	rest, ok := strings.CutPrefix(it.ID, hearth.PrefixMCPApprovalRequest+"_")
	if !ok || len(rest) != 2*(approvalNonceSize+seal.TagSize) {
		return false
	}
	raw, err := hex.DecodeString(rest)
	if err != nil {
		return false
	}
	nonce, tag := raw[:approvalNonceSize], raw[approvalNonceSize:]
	return e.Seal.Verify(tag, seal.MCPApproval, approvalFields(caller, nonce, it)...)
}

func approvalFields(caller string, nonce []byte, it hearth.Item) [][]byte {
	return [][]byte{[]byte(caller), nonce, []byte(it.ServerLabel), []byte(it.Name), []byte(it.Arguments)}
}
