package vectorstores

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"hearth"
	"hearth/filesearch"
	"hearth/internal/attrfilter"
	"hearth/storage"
)

// The vector stores as a file search kind reaches them (package filesearch's
// Stores: cmd/hearth hands the kind the service): the same stores, ownership and
// search as /v1/vector_stores/{id}/search, asked for by the engine while it runs a
// response.

// MissingVectorStore returns the index in ids of the first id that names no vector
// store of owner (another key's store is missing too), or -1 when every id names one.
func (s *Service) MissingVectorStore(ctx context.Context, owner string, ids []string) (int, error) {
	if s.db == nil {
		return -1, errors.New("vector stores need a database")
	}
	for i, id := range ids {
		_, err := s.db.GetVectorStore(ctx, owner, id)
		switch {
		case errors.Is(err, storage.ErrVectorStoreNotFound):
			return i, nil
		case err != nil:
			return -1, err
		}
	}
	return -1, nil
}

// SearchVectorStores searches owner's stores q names, each with its own embedding
// model, and returns the best q.MaxNumResults chunks of them all, best first (ties:
// the order of the stores, then of their chunks). The files of a store still being
// ingested are searched as far as they are done: what a search finds is what the
// store holds now. A store that is gone is an error (the search fails; the model
// reads why).
func (s *Service) SearchVectorStores(ctx context.Context, owner string, q filesearch.FileSearchQuery) ([]filesearch.FileSearchResult, error) {
	if s.db == nil {
		return nil, errors.New("vector stores need a database")
	}
	for _, query := range q.Queries {
		// The model's query: the model reads why it was refused, and may search
		// again with a shorter one.
		if he := queryTooLong("query", query); he != nil {
			return nil, errors.New(he.Message)
		}
	}
	req := SearchQuery{Queries: q.Queries, Max: q.MaxNumResults, Threshold: -1}
	if req.Max <= 0 {
		req.Max = defaultSearchHits
	}
	if q.ScoreThreshold != nil {
		req.Threshold = float32(*q.ScoreThreshold)
	}
	if len(q.Filters) > 0 {
		f, err := attrfilter.Parse(q.Filters, "filters")
		if err != nil {
			return nil, err
		}
		req.Filter = f
	}
	var found []filesearch.FileSearchResult
	for _, id := range q.VectorStoreIDs {
		v, err := s.db.GetVectorStore(ctx, owner, id)
		if errors.Is(err, storage.ErrVectorStoreNotFound) {
			return nil, fmt.Errorf("vector store %s was not found (deleted?)", id)
		} else if err != nil {
			return nil, err
		}
		hits, chunks, err := s.search(ctx, v, req)
		if err != nil {
			var he *hearth.Error
			if errors.As(err, &he) {
				return nil, fmt.Errorf("vector store %s: %s", id, he.Message)
			}
			return nil, err
		}
		if err := s.db.TouchVectorStore(ctx, owner, id, time.Now()); err != nil {
			s.log.Warn("vector store: recording its activity failed", "vector_store", id, "err", err)
		}
		for _, h := range hits {
			ch := chunks[h.ID]
			r := filesearch.FileSearchResult{FileID: ch.FileID, Filename: ch.Filename, Score: float64(h.Score), Text: ch.Text}
			_ = json.Unmarshal(ch.Attributes, &r.Attributes)
			found = append(found, r)
		}
	}
	// Stable: equal scores keep the order of the stores and of each store's hits.
	slices.SortStableFunc(found, func(a, b filesearch.FileSearchResult) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return found[:min(len(found), req.Max)], nil
}
