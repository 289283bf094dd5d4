package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"hearth"
	"hearth/internal/seal"
)

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
func approvalID(key *seal.Key, caller string, it hearth.Item) string {
	var nonce [approvalNonceSize]byte
	rand.Read(nonce[:]) // never fails (crypto/rand doc, Go 1.24+)
	tag := key.Tag(seal.MCPApproval, approvalFields(caller, nonce[:], it)...)
	return PrefixMCPApprovalRequest + "_" + hex.EncodeToString(nonce[:]) + hex.EncodeToString(tag)
}

// approvalIssued reports whether hearth issued the mcp_approval_request it to caller,
// as it stands (approvalID).
func approvalIssued(key *seal.Key, caller string, it hearth.Item) bool {
	if key == nil {
		return false
	}
	rest, ok := strings.CutPrefix(it.ID, PrefixMCPApprovalRequest+"_")
	if !ok || len(rest) != 2*(approvalNonceSize+seal.TagSize) {
		return false
	}
	raw, err := hex.DecodeString(rest)
	if err != nil {
		return false
	}
	nonce, tag := raw[:approvalNonceSize], raw[approvalNonceSize:]
	return key.Verify(tag, seal.MCPApproval, approvalFields(caller, nonce, it)...)
}

func approvalFields(caller string, nonce []byte, it hearth.Item) [][]byte {
	return [][]byte{[]byte(caller), nonce, []byte(Of(it).ServerLabel), []byte(it.Name), []byte(it.Arguments)}
}
