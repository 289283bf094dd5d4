// Package schematest checks what hearth sends against the Open Responses
// OpenAPI document: JSON Schema validation of responses and events, the
// order rules of an event stream, and SSE framing. It is for tests of any
// hearth package (root types, server end-to-end tests).
//
// The document is a copy kept in the repository (testdata/openresponses, with its
// license) and compiled into the package, so the tests need nothing beside the
// repository; $HEARTH_OPENAPI names another file to validate against instead, such
// as a newer version of the specification.
package schematest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// document is the Open Responses OpenAPI document, version 2026-04-24 (Apache-2.0; see
// testdata/openresponses/NOTICE).
//
//go:embed testdata/openresponses/openapi.json
var document []byte

// documentURL names the embedded document to the schema compiler.
const documentURL = "file:///hearth/internal/schematest/testdata/openresponses/openapi.json"

// Doc is one version of the OpenAPI document to validate against.
type Doc struct {
	// extend adds schemas to the document before it is compiled.
	extend func(schemas map[string]any) error
	suffix string // told apart in the compiler's resource URL
	// extraEvents maps the event types extend adds to their schemas.
	extraEvents map[string]string

	loadOnce sync.Once
	loadErr  error
	docURL   string

	mu       sync.Mutex // guards compiler and compiled: Compiler is not concurrency-safe
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
	events   map[string]string
}

var (
	// Spec is the Open Responses document as published. The package-level functions
	// validate against it.
	Spec = &Doc{}
	// CustomTools is Spec plus OpenAI's definitions of what the document lacks for
	// custom (freeform) tools: the custom tool and tool_choice {"type":"custom"}, the
	// custom_tool_call and custom_tool_call_output items (in ItemField and ItemParam)
	// and the response.custom_tool_call_input.delta / .done events. hearth sends those
	// only for requests with custom tools, which the spec cannot express.
	CustomTools = &Doc{extend: addCustomTools, suffix: "+custom-tools"}
)

// source returns the OpenAPI document to validate against and the URL naming it:
// $HEARTH_OPENAPI when set, else the copy compiled into the package.
func source() (io.Reader, string, error) {
	p := os.Getenv("HEARTH_OPENAPI")
	if p == "" {
		return bytes.NewReader(document), documentURL, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("schematest: HEARTH_OPENAPI: %w", err)
	}
	abs, _ := filepath.Abs(p)
	return bytes.NewReader(b), "file://" + filepath.ToSlash(abs), nil
}

func (d *Doc) load() error {
	d.loadOnce.Do(func() {
		f, path, err := source()
		if err != nil {
			d.loadErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			d.loadErr = fmt.Errorf("schematest: %s: %w", path, err)
			return
		}
		d.events = maps.Clone(EventSchemas)
		if d.extend != nil {
			schemas, ok := lookup(doc, "components", "schemas").(map[string]any)
			if !ok {
				d.loadErr = fmt.Errorf("schematest: %s has no components.schemas", path)
				return
			}
			if err := d.extend(schemas); err != nil {
				d.loadErr = fmt.Errorf("schematest: extending %s: %w", path, err)
				return
			}
			maps.Copy(d.events, customToolEvents)
			maps.Copy(d.events, d.extraEvents)
		}
		d.docURL = path + d.suffix
		d.compiler = jsonschema.NewCompiler()
		d.compiled = map[string]*jsonschema.Schema{}
		// OpenAPI 3.1 schemas are JSON Schema 2020-12; discriminator and the
		// x- keywords are annotations the validator ignores.
		d.compiler.DefaultDraft(jsonschema.Draft2020)
		d.loadErr = d.compiler.AddResource(d.docURL, doc)
	})
	return d.loadErr
}

func lookup(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (d *Doc) schema(name string) (*jsonschema.Schema, error) {
	if err := d.load(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.compiled[name]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(d.docURL + "#/components/schemas/" + name)
	if err != nil {
		return nil, fmt.Errorf("schematest: compile %s: %w", name, err)
	}
	d.compiled[name] = s
	return s, nil
}

// Check validates v against #/components/schemas/<name> of the published document.
// v is JSON ([]byte, json.RawMessage) or any value json.Marshal accepts.
func Check(name string, v any) error { return Spec.Check(name, v) }

// Check validates v against #/components/schemas/<name> of d.
func (d *Doc) Check(name string, v any) error {
	s, err := d.schema(name)
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

// Validate fails t unless v is valid against #/components/schemas/<name> of the
// published document.
func Validate(t testing.TB, name string, v any) {
	t.Helper()
	Spec.Validate(t, name, v)
}

// Validate fails t unless v is valid against #/components/schemas/<name> of d.
func (d *Doc) Validate(t testing.TB, name string, v any) {
	t.Helper()
	if err := d.Check(name, v); err != nil {
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
// published schema its type names; a type outside the schema's list is an error, as
// it is for the official compliance validator.
func CheckEvent(v any) error { return Spec.CheckEvent(v) }

// CheckEvent validates one event against d's schema for its type.
func (d *Doc) CheckEvent(v any) error {
	if err := d.load(); err != nil {
		return err
	}
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
	name, ok := d.events[head.Type]
	if !ok {
		return fmt.Errorf("schematest: event type %q is not in the schema", head.Type)
	}
	return d.Check(name, data)
}

// ValidateEvents fails t for every event that is not valid against its published
// schema.
func ValidateEvents(t testing.TB, events []map[string]any) {
	t.Helper()
	Spec.ValidateEvents(t, events)
}

// ValidateEvents fails t for every event that is not valid against d.
func (d *Doc) ValidateEvents(t testing.TB, events []map[string]any) {
	t.Helper()
	for i, e := range events {
		if err := d.CheckEvent(e); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
}

// CheckWebSocketMessage validates one server message of the WebSocket mode: an
// "error" message with a status is a WebSocketErrorEvent (and, when it also carries a
// sequence_number, an error in the middle of a response, so an ErrorStreamingEvent
// too); every other message is a streaming event, as in an SSE stream (CheckEvent).
func CheckWebSocketMessage(data []byte) error { return Spec.CheckWebSocketMessage(data) }

// CheckWebSocketMessage validates one server message of the WebSocket mode against d.
func (d *Doc) CheckWebSocketMessage(data []byte) error {
	var head struct {
		Type           string `json:"type"`
		Status         *int   `json:"status"`
		SequenceNumber *int   `json:"sequence_number"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("schematest: message is not a JSON object: %w", err)
	}
	if head.Type != "error" || head.Status == nil {
		return d.CheckEvent(data)
	}
	if err := d.Check("WebSocketErrorEvent", data); err != nil {
		return err
	}
	if head.SequenceNumber != nil {
		return d.CheckEvent(data)
	}
	return nil
}
