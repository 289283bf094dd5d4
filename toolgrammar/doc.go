// Package toolgrammar turns the raw text a local model generates into
// reasoning, message text and function calls, incrementally, and builds the
// JSON-schema constraints an engine uses to force well-formed calls.
//
// Formats are data: each model family is described in models.json by its
// envelope kind and delimiters (LoadFormats, Registry.Merge for a user
// file), and a model is matched to its family by template fingerprint
// first, then by Ollama's renderer/parser name, family and name
// (Registry.Detect). The package is pure: standard library only, no I/O, no
// runtime.
//
// # Parsing
//
// A Parser is fed the raw output in chunks cut anywhere, mid-delimiter and
// mid-character included, and returns events: text and reasoning deltas,
// calls (CallBegin with the name, ArgumentsDelta fragments of compact JSON
// as they are generated, CallEnd with the canonical arguments) and
// Malformed spans. It holds back only bytes that could still be a delimiter
// or the rest of a UTF-8 sequence, so events come out as early as they are
// certain, and the same output gives the same events however it is chunked.
//
// # Decision points and constrained continuation
//
// CallOpen, CallBegin, ReasoningEnd and CallEnd are decision points: their
// Offset says exactly how much of the output they cover, so an engine can
// stop generation there, keep output[:Offset], and continue with a
// constrained request. How depends on the format's Plan:
//
//	PlanCall          prompt + output[:off] + f.CallPrefix(soFar), generate with
//	                  format=CallSchema(f, tools, parallel), then append f.CallSuffix().
//	PlanNameThenArgs  append f.CallPrefix(soFar), generate with NameSchema(tools),
//	                  decode the JSON string, append f.ArgumentsPrefix(name), generate
//	                  with ArgumentsSchema(tool), append f.CallSuffix().
//	PlanNameOnly      append f.CallPrefix(soFar), generate with NameSchema(tools) (or
//	                  write the one allowed name), append f.ArgumentsPrefix(name)
//	                  and let the model write the arguments (XML parameters,
//	                  Gemma's or Python's syntax); to constrain them (a retry), generate with
//	                  ArgumentsSchema(tool) and append f.ArgumentsFromJSON(json)
//	                  instead, which ends the call.
//
// Harmony formats name a call in its message's header: an engine that writes
// another name cuts the transcript where f.RecipientAt says the recipient
// begins, and writes what it says must precede a name.
//
// Everything the engine appends is fed to the parser like model output, so
// the parser sees one continuous transcript.
package toolgrammar
