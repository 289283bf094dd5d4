package engine

import (
	"fmt"
	"os"

	"hearth"
	"hearth/toolgrammar"
)

// DefaultFormats is the registry of model formats built into hearth (models.json).
// It panics if the embedded file is broken, which a test catches before release.
func DefaultFormats() *toolgrammar.Registry {
	r, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		panic(fmt.Sprintf("embedded models.json: %v", err))
	}
	return r
}

// LoadFormats returns the built-in formats extended or overridden by the models.json
// file at path (entries with the same id replace built-in ones).
func LoadFormats(path string) (*toolgrammar.Registry, error) {
	r := DefaultFormats()
	if path == "" {
		return r, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models file: %w", err)
	}
	if err := r.Merge(data); err != nil {
		return nil, fmt.Errorf("models file %s: %w", path, err)
	}
	return r, nil
}
