// Package hearth holds the Open Responses domain types that every other
// hearth package speaks: the create request and its validation, input and
// output items, the response object, streaming events, and API errors.
// It uses only the standard library.
//
// The flow of one request through these types:
//
//	req, ignored, err := hearth.DecodeCreateRequest(body) // err is a *hearth.Error (400)
//	resp := hearth.NewResponse(hearth.NewID(hearth.PrefixResponse), req, time.Now())
//	b := hearth.NewBuilder(resp, emit) // emit frames each Event as SSE; nil when not streaming
//	b.Start()
//	... b.ReasoningDelta, b.TextDelta, b.StartFunctionCall, b.ArgumentsDelta, b.EndItem ...
//	b.Complete(usage) // or b.Incomplete(reason, usage) or b.Fail(err, usage)
//	store(b.Response())
//
// What hearth sends is checked against the Open Responses OpenAPI document
// in tests (see internal/schematest). Where the schema cannot represent
// something hearth supports, the type's documentation says so: custom tool
// calls, namespace tools in the response's tools list, and the echoed
// json_schema text format.
package hearth
