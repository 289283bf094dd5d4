package respond

import (
	"context"
	"fmt"

	"hearth"
)

// resolveReferences replaces each item_reference of input, in place, with the item it
// names: an item of local (a WebSocket connection's own conversation, which a
// store: false response never wrote to storage) when that holds the id, else any input
// or output item stored under the caller's key. The engine, storage and the
// connection state then see only real items: a response stores the items its
// references stood for, so a chain continued from it later needs no lookup.
//
// An id found nowhere (unknown, another key's, of a deleted response) is a 400 naming
// input[i].id, with OpenAI's message for it.
func (s *Service) resolveReferences(ctx context.Context, owner string, input, local []hearth.Item) error {
	var ids []string
	for _, it := range input {
		if it.Type == hearth.ItemReference {
			ids = append(ids, it.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	known := make(map[string]hearth.Item, len(local))
	for _, it := range local {
		if it.ID != "" && it.Type != hearth.ItemReference {
			known[it.ID] = it // a later copy of an id wins, as in storage
		}
	}
	var lookup []string
	for _, id := range ids {
		if _, ok := known[id]; !ok {
			lookup = append(lookup, id)
		}
	}
	if len(lookup) > 0 && s.db != nil {
		stored, err := s.db.LookupItems(ctx, owner, lookup)
		if err != nil {
			return fmt.Errorf("resolve item references: %w", err)
		}
		for id, st := range stored {
			it, err := s.items.decode(st.JSON)
			if err != nil {
				return fmt.Errorf("stored item %s: %w", id, err)
			}
			known[id] = it
		}
	}
	for i := range input {
		if input[i].Type != hearth.ItemReference {
			continue
		}
		it, ok := known[input[i].ID]
		if !ok {
			return hearth.InvalidRequest(fmt.Sprintf("input[%d].id", i), "",
				fmt.Sprintf("Item with id '%s' not found.", input[i].ID))
		}
		input[i] = it.Clone()
	}
	return nil
}
