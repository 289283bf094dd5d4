package server

import "hearth/storage"

// Store is what the server and the parts it is given (the core, the vector stores
// service: cmd/hearth/wire hands them this one store) need of the store: responses and
// their chains, journals, conversations, files, vector stores, key lookups for
// authentication, the console's reads, a health check, the changes that the processes
// sharing the store make (changes.go), and the leases that keep their in-flight
// responses from outliving them.
// storage.Store has all of it (storage/sqlite and storage/postgres; cmd/hearth picks
// which); key management and startup recovery are cmd/hearth's, not the server's.
type Store interface {
	storage.Responses
	storage.Chains
	storage.Journal
	storage.Conversations
	storage.Files
	storage.VectorStores
	storage.KeyLookup
	storage.Console
	storage.Health
	storage.Changes
	storage.Leases
}
