package engine

import (
	"hearth"
	"hearth/internal/scrub"
)

// RuntimeFailure is the client's error for a runtime's own failure (a model it cannot
// load, a runner that died): "The runtime failed: " and the runtime's message, without
// the runtime host's details. The directories of the file paths in it are left out
// (a models directory under someone's home, where its binaries live) and so are the
// addresses (a runner's loopback URL and port, the host:port of an external runtime,
// a unix socket), which an API client has no use for and a user key should not learn;
// the file's own name stays (a model blob's digest, "llama-server"), and so does what
// happened ("connection refused", "EOF"). The log keeps the whole message.
func RuntimeFailure(message string) *hearth.Error {
	return hearth.ServerError("The runtime failed: " + scrub.HostDetails(message))
}
