package hearth

import (
	"fmt"
)

// ContextCompaction is the one context_management entry type: server-side compaction.
const ContextCompaction = "compaction"

// MinCompactThreshold is the lowest compact_threshold OpenAI's schema allows: a
// threshold below it would compact nearly every turn of a real conversation.
const MinCompactThreshold = 1000

// ContextManagement is an entry of OpenAI's context_management: with Type
// "compaction", the server compacts the conversation before a turn whose rendered
// input would exceed CompactThreshold tokens (or the model's context window), and the
// turn goes on from the compacted window. A nil CompactThreshold compacts only where
// the input would not fit the window.
type ContextManagement struct {
	Type             string `json:"type"`
	CompactThreshold *int   `json:"compact_threshold,omitempty"`
}

// Compaction returns the request's compaction entry, if it asks for server-side
// compaction.
func (r *CreateResponseRequest) Compaction() (ContextManagement, bool) {
	for _, c := range r.ContextManagement {
		if c.Type == ContextCompaction {
			return c, true
		}
	}
	return ContextManagement{}, false
}

// decodeContextManagement reads context_management: an array of entries whose type is
// "compaction" (the only type OpenAI defines), at most one of them, each with an
// optional integer compact_threshold of at least MinCompactThreshold.
func decodeContextManagement(o object) ([]ContextManagement, error) {
	elems, ok, err := o.array("context_management")
	if err != nil || !ok {
		return nil, err
	}
	out := make([]ContextManagement, 0, len(elems))
	for i, e := range elems {
		p := indexPath("context_management", i)
		eo, err := asObject(e, p)
		if err != nil {
			return nil, err
		}
		var c ContextManagement
		if c.Type, err = eo.requiredEnum("type", []string{ContextCompaction}); err != nil {
			return nil, err
		}
		if c.CompactThreshold, err = eo.integerAtLeast("compact_threshold", MinCompactThreshold); err != nil {
			return nil, err
		}
		if i > 0 {
			return nil, InvalidRequest(p, CodeInvalidValue,
				fmt.Sprintf("Invalid '%s': context_management has one entry of type 'compaction' at most.", p))
		}
		out = append(out, c)
	}
	return out, nil
}
