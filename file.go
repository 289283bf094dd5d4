package hearth

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"hearth/internal/textcap"
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
			textcap.Cut(purpose, 64), strings.Join(FilePurposes, "', '")))
	}
	return nil
}

// FileNotFound is the 404 for a file id that is unknown, deleted or another key's.
func FileNotFound(param, id string) *Error {
	return NotFound(param, CodeFileNotFound, fmt.Sprintf("File with id '%s' not found.", textcap.Cut(id, 100)))
}

// textDataPrefix starts the file_data of an input_file whose text hearth has read:
// the server replaces a file (by id, by data) with its text in this form before the
// response runs and is stored, so a chain that continues from it later needs neither
// the file nor its reading again.
const textDataPrefix = "data:text/plain;charset=utf-8;base64,"

// FileTextPart is the input_file part that stands for a file whose text is text: the
// file id it came from (if any), its name, and the text as a text/plain data URL.
func FileTextPart(fileID, filename, text string) ContentPart {
	return ContentPart{Type: PartInputFile, FileID: fileID, Filename: filename,
		FileData: textDataPrefix + base64.StdEncoding.EncodeToString([]byte(text))}
}

// FileText returns the text of an input_file part in FileTextPart's form; ok is false
// for any other part.
func (p ContentPart) FileText() (text string, ok bool) {
	if p.Type != PartInputFile {
		return "", false
	}
	enc, ok := strings.CutPrefix(p.FileData, textDataPrefix)
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// ParseDataURL splits a base64 data URL (data:<media type>[;params];base64,<data>)
// into its media type and bytes; ok is false when s is not one.
func ParseDataURL(s string) (mediaType string, data []byte, ok bool, err error) {
	rest, isData := strings.CutPrefix(s, "data:")
	if !isData {
		return "", nil, false, nil
	}
	meta, enc, found := strings.Cut(rest, ",")
	if !found || !strings.HasSuffix(meta, ";base64") {
		return "", nil, true, fmt.Errorf("a data URL must be base64 (data:<media type>;base64,<data>)")
	}
	mediaType, _, _ = strings.Cut(strings.TrimSuffix(meta, ";base64"), ";")
	data, err = base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", nil, true, fmt.Errorf("its base64 is malformed: %v", err)
	}
	return mediaType, data, true, nil
}
