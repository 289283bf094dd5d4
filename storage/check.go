package storage

import (
	"encoding/json"
	"errors"
	"fmt"

	"hearth/internal/jsonscan"
)

// Check validates a response about to be created. Every store runs it first in
// CreateResponse and StoreResponse, so that all of them refuse the same records.
func (r *NewResponse) Check() error {
	if r.ID == "" || r.Owner == "" || r.Model == "" {
		return errors.New("id, owner and model are required")
	}
	if !r.Status.InFlight() {
		return fmt.Errorf("status %q, want queued or in_progress", r.Status)
	}
	if !jsonscan.Valid(r.Request) {
		return errors.New("request is not valid JSON")
	}
	if len(r.Body) > 0 && !jsonscan.Valid(r.Body) {
		return errors.New("body is not valid JSON")
	}
	if err := CheckItems(r.Input); err != nil {
		return fmt.Errorf("input %w", err)
	}
	return nil
}

// Check validates the end of a response, as CompleteResponse and StoreResponse take it.
func (f *Final) Check() error {
	if !f.Status.Terminal() {
		return fmt.Errorf("status %q is not terminal", f.Status)
	}
	if len(f.Body) > 0 && !jsonscan.Valid(f.Body) {
		return errors.New("body is not valid JSON")
	}
	if len(f.Error) > 0 && !jsonscan.Valid(f.Error) {
		return errors.New("error is not valid JSON")
	}
	if err := CheckItems(f.Output); err != nil {
		return fmt.Errorf("output %w", err)
	}
	return nil
}

// CheckItems validates items about to be stored: each has a type and is valid JSON.
func CheckItems(items []Item) error {
	for i, it := range items {
		if it.Type == "" {
			return fmt.Errorf("item %d: type is required", i)
		}
		if !jsonscan.Valid(it.JSON) {
			return fmt.Errorf("item %d: not valid JSON", i)
		}
	}
	return nil
}

// MetadataJSON is a conversation's metadata as every store keeps it: a JSON object of
// strings, {} when there is none. Both stores check it the same way, so that they refuse
// the same metadata.
func MetadataJSON(m json.RawMessage) (string, error) {
	if len(m) == 0 || string(m) == "null" {
		return "{}", nil
	}
	var probe map[string]string
	if err := json.Unmarshal(m, &probe); err != nil {
		return "", fmt.Errorf("metadata is not a JSON object of strings: %w", err)
	}
	return string(m), nil
}
