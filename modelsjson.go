package hearth

import _ "embed"

// ModelsJSON is the built-in table of model families (tool-call and
// reasoning formats, stops, how to recognise a model); toolgrammar.LoadFormats
// parses it.
//
//go:embed models.json
var ModelsJSON []byte
