package respond

import (
	"errors"
	"log/slog"
	"net/http"

	"hearth"
	"hearth/storage"
)

// CodeStorageFull is the error code of a request that needed to store something while
// the database's disk was full: a 507, type server_error.
const CodeStorageFull = "storage_full"

// storageFullMessage says what a client can do about a full disk: nothing but wait.
const storageFullMessage = "hearth's storage is full: the database's disk has no space left, so nothing new can be stored. " +
	"What was stored is intact and can be read; retry once the operator has freed space."

// CodeStorageUnavailable is the error code of a request that needed the database while
// it could not be reached (down, restarting, refusing connections): a 503, type
// server_error, with Retry-After.
const CodeStorageUnavailable = "storage_unavailable"

// storageUnavailableMessage says what a client can do while the database is away.
const storageUnavailableMessage = "hearth's database cannot be reached right now (it may be restarting), so nothing could be read or stored. " +
	"Nothing of this request was stored; retry in a few seconds."

// APIError is the one error encoder of every response path (HTTP, SSE, WebSocket): a
// *hearth.Error keeps its status and envelope; a full disk is a 507 storage_full; a
// database that cannot be reached is a 503 storage_unavailable; anything else is a 500
// server_error whose details stay in the log (log), never in the answer.
func APIError(log *slog.Logger, err error, attrs ...any) *hearth.Error {
	var he *hearth.Error
	if !errors.As(err, &he) && errors.Is(err, storage.ErrFull) {
		log.Error("request failed", append(attrs, "error", err)...)
		return &hearth.Error{Status: http.StatusInsufficientStorage, Type: hearth.ErrTypeServer, Code: CodeStorageFull, Message: storageFullMessage}
	}
	if he == nil && errors.Is(err, storage.ErrUnavailable) {
		log.Error("request failed", append(attrs, "error", err)...)
		return &hearth.Error{Status: http.StatusServiceUnavailable, Type: hearth.ErrTypeServer, Code: CodeStorageUnavailable, Message: storageUnavailableMessage}
	}
	if he == nil {
		log.Error("request failed", append(attrs, "error", err)...)
		he = hearth.ServerError("The server had an error while processing your request.")
	}
	return he
}

// notStoredMessage is what a client is told of a response that ran but could not be
// stored (err: why), in its error event and its failed state.
func notStoredMessage(err error) string {
	if errors.Is(err, storage.ErrFull) {
		return "The response could not be stored: " + storageFullMessage
	}
	if errors.Is(err, storage.ErrUnavailable) {
		return "The response could not be stored: hearth's database cannot be reached right now (it may be restarting). Retry in a few seconds."
	}
	return "The response could not be stored."
}
