// Package schematest checks what hearth sends against the Open Responses
// OpenAPI document: JSON Schema validation of responses and events, the
// order rules of an event stream, and SSE framing. It is for tests of any
// hearth package (root types, server end-to-end tests).
//
// The document is found by walking up from the working directory to a
// directory holding shared/openresponses/openapi.json (the repository is
// cloned next to shared/), or at $HEARTH_OPENAPI.
package schematest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DocumentPath is where the OpenAPI document lives relative to an ancestor
// of the working directory.
const DocumentPath = "shared/openresponses/openapi.json"

var (
	loadOnce sync.Once
	loadErr  error
	docURL   string

	mu       sync.Mutex // guards compiler and compiled: Compiler is not concurrency-safe
	compiler *jsonschema.Compiler
	compiled = map[string]*jsonschema.Schema{}
)

// Locate returns the path of the OpenAPI document.
func Locate() (string, error) {
	if p := os.Getenv("HEARTH_OPENAPI"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, DocumentPath)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("schematest: no %s above the working directory (set HEARTH_OPENAPI)", DocumentPath)
		}
		dir = parent
	}
}

func load() error {
	loadOnce.Do(func() {
		path, err := Locate()
		if err != nil {
			loadErr = err
			return
		}
		f, err := os.Open(path)
		if err != nil {
			loadErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			loadErr = fmt.Errorf("schematest: %s: %w", path, err)
			return
		}
		abs, _ := filepath.Abs(path)
		docURL = "file://" + filepath.ToSlash(abs)
		compiler = jsonschema.NewCompiler()
		// OpenAPI 3.1 schemas are JSON Schema 2020-12; discriminator and the
		// x- keywords are annotations the validator ignores.
		compiler.DefaultDraft(jsonschema.Draft2020)
		loadErr = compiler.AddResource(docURL, doc)
	})
	return loadErr
}

func schema(name string) (*jsonschema.Schema, error) {
	if err := load(); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	s, err := compiler.Compile(docURL + "#/components/schemas/" + name)
	if err != nil {
		return nil, fmt.Errorf("schematest: compile %s: %w", name, err)
	}
	compiled[name] = s
	return s, nil
}

// Check validates v against #/components/schemas/<name>. v is JSON ([]byte,
// json.RawMessage) or any value json.Marshal accepts.
func Check(name string, v any) error {
	s, err := schema(name)
	if err != nil {
		return err
	}
	var data []byte
	switch x := v.(type) {
	case []byte:
		data = x
	case json.RawMessage:
		data = x
	default:
		if data, err = json.Marshal(v); err != nil {
			return fmt.Errorf("schematest: marshal: %w", err)
		}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("schematest: not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s: %#v\ninstance: %s", name, ve, data)
		}
		return fmt.Errorf("%s: %w\ninstance: %s", name, err, data)
	}
	return nil
}

// Validate fails t unless v is valid against #/components/schemas/<name>.
func Validate(t testing.TB, name string, v any) {
	t.Helper()
	if err := Check(name, v); err != nil {
		t.Error(err)
	}
}

// EventSchemas maps each streaming event type to its schema name.
var EventSchemas = map[string]string{
	"response.created":                       "ResponseCreatedStreamingEvent",
	"response.queued":                        "ResponseQueuedStreamingEvent",
	"response.in_progress":                   "ResponseInProgressStreamingEvent",
	"response.completed":                     "ResponseCompletedStreamingEvent",
	"response.failed":                        "ResponseFailedStreamingEvent",
	"response.incomplete":                    "ResponseIncompleteStreamingEvent",
	"response.output_item.added":             "ResponseOutputItemAddedStreamingEvent",
	"response.output_item.done":              "ResponseOutputItemDoneStreamingEvent",
	"response.reasoning_summary_part.added":  "ResponseReasoningSummaryPartAddedStreamingEvent",
	"response.reasoning_summary_part.done":   "ResponseReasoningSummaryPartDoneStreamingEvent",
	"response.content_part.added":            "ResponseContentPartAddedStreamingEvent",
	"response.content_part.done":             "ResponseContentPartDoneStreamingEvent",
	"response.output_text.delta":             "ResponseOutputTextDeltaStreamingEvent",
	"response.output_text.done":              "ResponseOutputTextDoneStreamingEvent",
	"response.refusal.delta":                 "ResponseRefusalDeltaStreamingEvent",
	"response.refusal.done":                  "ResponseRefusalDoneStreamingEvent",
	"response.reasoning.delta":               "ResponseReasoningDeltaStreamingEvent",
	"response.reasoning.done":                "ResponseReasoningDoneStreamingEvent",
	"response.reasoning_summary_text.delta":  "ResponseReasoningSummaryDeltaStreamingEvent",
	"response.reasoning_summary_text.done":   "ResponseReasoningSummaryDoneStreamingEvent",
	"response.output_text.annotation.added":  "ResponseOutputTextAnnotationAddedStreamingEvent",
	"response.function_call_arguments.delta": "ResponseFunctionCallArgumentsDeltaStreamingEvent",
	"response.function_call_arguments.done":  "ResponseFunctionCallArgumentsDoneStreamingEvent",
	"error":                                  "ErrorStreamingEvent",
}

// CheckEvent validates one event (JSON or a marshalable value) against the
// schema its type names; a type outside the schema's list is an error, as
// it is for the official compliance validator.
func CheckEvent(v any) error {
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			return fmt.Errorf("schematest: marshal: %w", err)
		}
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("schematest: event is not a JSON object: %w", err)
	}
	name, ok := EventSchemas[head.Type]
	if !ok {
		return fmt.Errorf("schematest: event type %q is not in the schema", head.Type)
	}
	return Check(name, data)
}

// ValidateEvents fails t for every event that is not valid against its schema.
func ValidateEvents(t testing.TB, events []map[string]any) {
	t.Helper()
	for i, e := range events {
		if err := CheckEvent(e); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
}

// CheckWebSocketMessage validates one server message of the WebSocket mode: an
// "error" message with a status is a WebSocketErrorEvent (and, when it also carries a
// sequence_number, an error in the middle of a response, so an ErrorStreamingEvent
// too); every other message is a streaming event, as in an SSE stream (CheckEvent).
func CheckWebSocketMessage(data []byte) error {
	var head struct {
		Type           string `json:"type"`
		Status         *int   `json:"status"`
		SequenceNumber *int   `json:"sequence_number"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("schematest: message is not a JSON object: %w", err)
	}
	if head.Type != "error" || head.Status == nil {
		return CheckEvent(data)
	}
	if err := Check("WebSocketErrorEvent", data); err != nil {
		return err
	}
	if head.SequenceNumber != nil {
		return CheckEvent(data)
	}
	return nil
}
