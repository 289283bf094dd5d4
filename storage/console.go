package storage

import (
	"time"
)

// Reads for the web console (server/console). They cross owners on purpose: only an
// admin (or anyone on a loopback server without keys) reaches the console, and a team's
// admin looks at everyone's responses. The API's own reads stay owner-scoped.

// ConsoleFilter selects responses for the console's list. Zero fields do not filter.
type ConsoleFilter struct {
	Owner        string
	Model        string
	Status       Status
	Since, Until time.Time
	// After is the keyset cursor: the list continues with responses created strictly
	// before (AfterCreated, AfterID), so a page is one index range however deep it is.
	AfterCreated time.Time
	AfterID      string
	Limit        int
}

// MaxConsoleChain bounds how many responses ConsoleChain returns: a tree larger than a
// page of people can read is cut, not loaded whole into memory.
const MaxConsoleChain = 500

// ConsoleTurn is one response of a chain with its items.
type ConsoleTurn struct {
	Response
	Input, Output []Item
}

// UsageBucket is the tokens of one owner and model in one time bucket.
type UsageBucket struct {
	Start        time.Time
	Owner, Model string
	Responses    int64
	Usage
}
