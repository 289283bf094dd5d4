package console

import "hearth/storage"

// Store is what the console reads of the store: responses across owners, the tree of
// a chain, and usage by bucket.
type Store interface {
	storage.Console
}
