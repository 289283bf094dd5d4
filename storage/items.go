package storage

// Page sizes of ListInputItems, as in the API.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)
