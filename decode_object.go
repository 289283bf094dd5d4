package hearth

import "encoding/json"

// Object is a JSON object of a request being decoded, as a kind's decoder
// (ItemType.Decode, ToolType.Decode) reads it: with the request decoder's own rules
// and errors, each an *Error (400) naming the field by its path. Its getters treat
// null like an absent field, as the schema's optional fields are nullable.
type Object struct{ o object }

// AsObject reads raw, found at path, as an object.
func AsObject(raw json.RawMessage, path string) (Object, error) {
	o, err := asObject(raw, path)
	return Object{o}, err
}

// At is the path of the object's field key.
func (o Object) At(key string) string { return o.o.at(key) }

// Keys are the object's field names, sorted.
func (o Object) Keys() []string { return o.o.keys() }

// Get returns a field's raw JSON; ok is false when it is absent or null.
func (o Object) Get(key string) (raw json.RawMessage, ok bool) { return o.o.get(key) }

// Has reports whether the field is there and not null.
func (o Object) Has(key string) bool { return o.o.has(key) }

// String reads an optional string field.
func (o Object) String(key string) (s string, ok bool, err error) { return o.o.string(key) }

// RequiredString reads a string field that must be there.
func (o Object) RequiredString(key string) (string, error) { return o.o.requiredString(key) }

// NullableString reads an optional string that may also be null ("" for both).
func (o Object) NullableString(key string) (string, error) {
	s, _, err := o.o.string(key)
	return s, err
}

// Enum reads an optional string field that must be one of allowed.
func (o Object) Enum(key string, allowed []string) (string, error) { return o.o.enum(key, allowed) }

// RequiredEnum is Enum for a field that must be there.
func (o Object) RequiredEnum(key string, allowed []string) (string, error) {
	return o.o.requiredEnum(key, allowed)
}

// ToolName reads a required name of the tool names' pattern (^[a-zA-Z0-9_-]{1,64}$).
func (o Object) ToolName(key string) (string, error) { return o.o.toolName(key) }

// Boolean reads an optional boolean field (nil when absent).
func (o Object) Boolean(key string) (*bool, error) { return o.o.boolean(key) }

// IntegerIn reads an optional integer field within [min, max] (nil when absent).
func (o Object) IntegerIn(key string, min, max int) (*int, error) {
	return o.o.integerIn(key, min, max)
}

// DecimalIn reads an optional number field within [min, max] (nil when absent).
func (o Object) DecimalIn(key string, min, max float64) (*float64, error) {
	return o.o.decimalIn(key, min, max)
}

// Array reads an optional array field's elements.
func (o Object) Array(key string) (elems []json.RawMessage, ok bool, err error) {
	return o.o.array(key)
}

// Object reads an optional object field.
func (o Object) Object(key string) (Object, bool, error) {
	v, ok, err := o.o.object(key)
	return Object{v}, ok, err
}

// DecodeStd decodes a field with encoding/json into dst; a failure is a type error
// at the field saying it wanted want.
func (o Object) DecodeStd(key string, dst any, want string) error {
	return o.o.decodeStd(key, dst, want)
}

// AsString reads raw, found at path, as a string.
func AsString(raw json.RawMessage, path string) (string, error) { return asString(raw, path) }

// AsArray reads raw, found at path, as an array.
func AsArray(raw json.RawMessage, path string) ([]json.RawMessage, error) { return asArray(raw, path) }

// JSONType is the type of a JSON value, as the decoder's errors name it: "null",
// "boolean", "string", "array", "object" or "number".
func JSONType(raw json.RawMessage) string {
	switch kindOf(raw) {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	case kindObject:
		return "object"
	case kindNumber:
		return "number"
	}
	return "invalid"
}

// IndexPath is the path of element i of the array at path.
func IndexPath(path string, i int) string { return indexPath(path, i) }

// TypeError is the 400 of a field of the wrong type.
func TypeError(path, want string, raw json.RawMessage) error { return typeError(path, want, raw) }

// Missing is the 400 of a required field left out.
func Missing(path string) error { return missing(path) }

// EmptyString is the 400 of a string that may not be empty.
func EmptyString(path string) error { return emptyString(path) }

// InvalidEnum is the 400 of a value not among allowed.
func InvalidEnum(path, got string, allowed []string) error { return invalidEnum(path, got, allowed) }

// CompactJSON is raw without insignificant whitespace (raw itself when it does not
// parse).
func CompactJSON(raw json.RawMessage) json.RawMessage { return compact(raw) }

// Nullable is s as a JSON string, or null when s is empty.
func Nullable(s string) *string { return nullable(s) }
