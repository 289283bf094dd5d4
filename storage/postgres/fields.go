package postgres

import (
	"bytes"
	"encoding/json"
	"io"
)

// setFields sets top-level fields of the JSON object body, keeping the order of the
// others, for status changes made by the store alone (the SQLite store's json_set).
// A body that is not a JSON object is returned as it is.
func setFields(body []byte, fields ...field) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return body
	}
	var kept []field
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return body
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return body
		}
		kept = append(kept, field{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return body
	}
	if _, err := dec.Token(); err != io.EOF {
		return body // something after the object
	}
next:
	for _, f := range fields {
		for i := range kept {
			if kept[i].key == f.key {
				kept[i].value = f.value
				continue next
			}
		}
		kept = append(kept, f)
	}
	out := []byte{'{'}
	for i, f := range kept {
		if i > 0 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(f.key)
		out = append(append(append(out, k...), ':'), f.value...)
	}
	return append(out, '}')
}

type field struct {
	key   string
	value json.RawMessage
}
