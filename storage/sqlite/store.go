package sqlite

import "hearth/storage"

// DB is the whole store contract; the conformance suite (storage/storetest) checks it.
var _ storage.Store = (*DB)(nil)
