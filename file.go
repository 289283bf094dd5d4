package hearth

import (
	"fmt"
	"slices"
	"strings"
)

// The Files API's objects, as OpenAI's API defines them.

// Object types and the id prefix of files.
const (
	ObjectFile = "file"
	PrefixFile = "file"
)

// FilePurposes are the purposes a file may be uploaded for (OpenAI's list). hearth
// stores a file the same way whatever its purpose; the purpose is the client's label,
// kept and filtered on.
var FilePurposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

// CodeFileNotFound is the code of the 404 for an unknown, deleted or foreign file.
const CodeFileNotFound = "file_not_found"

// File is a stored file as the API presents it.
type File struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	// ExpiresAt is null: hearth keeps files until they are deleted.
	ExpiresAt *int64 `json:"expires_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	// Status is "processed" once stored (OpenAI's field, deprecated there but still
	// read by older SDKs).
	Status string `json:"status"`
}

// FileDeleted answers DELETE /v1/files/{id}.
type FileDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// CheckFilePurpose is the 400 for a purpose not in FilePurposes, nil otherwise.
func CheckFilePurpose(purpose string) error {
	if purpose == "" {
		return InvalidRequest("purpose", CodeMissingRequiredParameter, "Missing required parameter: 'purpose'.")
	}
	if !slices.Contains(FilePurposes, purpose) {
		return InvalidRequest("purpose", CodeInvalidValue, fmt.Sprintf("Invalid value for 'purpose': '%s'. Supported values are: '%s'.",
			capString(purpose, 64), strings.Join(FilePurposes, "', '")))
	}
	return nil
}

// FileNotFound is the 404 for a file id that is unknown, deleted or another key's.
func FileNotFound(param, id string) *Error {
	return NotFound(param, CodeFileNotFound, fmt.Sprintf("File with id '%s' not found.", capString(id, 100)))
}

// capString cuts s to at most n bytes at a rune boundary, marking the cut: ids and
// names come from the client, and an error must not echo 100 KB of one.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}
