package engine

import (
	"regexp"

	"hearth"
)

// RuntimeFailure is the client's error for a runtime's own failure (a model it cannot
// load, a runner that died): "The runtime failed: " and the runtime's message, with the
// directories of the file paths in it left out. Those paths are the runtime host's (a
// models directory under someone's home, where its binaries live), which an API
// client has no use for and a user key should not learn; the file's own name stays
// (a model blob's digest, "llama-server"), and the log keeps the whole message.
func RuntimeFailure(message string) *hearth.Error {
	return hearth.ServerError("The runtime failed: " + withoutDirectories(message))
}

// hostDirectory matches the directory part of an absolute path (POSIX or Windows) that
// starts a word: after the start, a space, a quote, a bracket, '=' or ','. A URL's
// path ("http://host:port/api/generate") follows a host, not one of those, and stays.
var hostDirectory = regexp.MustCompile(`(^|[\s"'(\[=,])((?:/[^/\s"'()\[\],;]+)+/|[A-Za-z]:\\(?:[^\\\s"'()\[\],;]+\\)+)`)

// withoutDirectories is s with the directories of its absolute paths left out.
func withoutDirectories(s string) string { return hostDirectory.ReplaceAllString(s, "$1") }
