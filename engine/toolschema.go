package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"hearth/internal/schemaguard"
	"hearth/toolgrammar"
)

// A call generated under a grammar of a tool's parameters is only as good as the
// schema: one that is no object schema (`{"type":"string"}`), that no value satisfies
// (minimum above maximum, multipleOf 0) or that the validator cannot compile makes
// every constrained call fail its check after generation, which the client would
// hear of as hearth's own fault. checkToolSchema finds those before anything runs,
// for a 400 naming the tool's parameters.

// checkToolSchema reports why calls of t cannot be generated under its parameters, or
// nil.
func checkToolSchema(t toolgrammar.Tool) error {
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 || string(raw) == "null" {
		return nil // any object
	}
	if err := schemaguard.CheckShape(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return fmt.Errorf("the parameters are not valid JSON: %v", err)
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return fmt.Errorf("the parameters must be a JSON schema object")
	}
	if !describesObject(obj) {
		return fmt.Errorf("the parameters must describe a JSON object (the arguments of a call are one), not type %v", obj["type"])
	}
	if err := unsatisfiable(root, "#"); err != nil {
		return err
	}
	if _, err := compileArgsSchema(t); err != nil {
		return fmt.Errorf("the parameters are not a valid JSON schema: %s", compileReason(err))
	}
	return nil
}

// compileReason says in one line why the validator could not compile a schema: for a
// schema the metaschema refuses, the first of the innermost failures, where it is.
func compileReason(err error) string {
	var sve *jsonschema.SchemaValidationError
	if !errors.As(err, &sve) {
		return firstLine(err.Error())
	}
	var ve *jsonschema.ValidationError
	if !errors.As(sve.Err, &ve) {
		return firstLine(err.Error())
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return fmt.Sprintf("at #/%s: %s", strings.Join(ve.InstanceLocation, "/"), ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
}

// describesObject reports whether a schema's type admits an object.
func describesObject(s map[string]any) bool {
	switch ty := s["type"].(type) {
	case nil:
		return true
	case string:
		return ty == "object"
	case []any:
		for _, t := range ty {
			if t == "object" {
				return true
			}
		}
	}
	return false
}

// boundPairs are keywords whose lower bound must not exceed the upper one.
var boundPairs = [][2]string{
	{"minimum", "maximum"},
	{"minLength", "maxLength"},
	{"minItems", "maxItems"},
	{"minProperties", "maxProperties"},
	{"minContains", "maxContains"},
}

// forcedMinimums are keywords that make every satisfying value at least so long, and
// maxForcedMinimum how long hearth lets a constrained call be made to write.
var forcedMinimums = []string{"minLength", "minItems", "minProperties"}

const maxForcedMinimum = 1000

// unsatisfiable finds a schema in v that no value satisfies by its bounds alone.
func unsatisfiable(v any, ptr string) error {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if err := unsatisfiable(e, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case map[string]any:
		num := func(k string) (float64, bool) {
			n, ok := x[k].(json.Number)
			if !ok {
				return 0, false
			}
			f, err := n.Float64()
			return f, err == nil
		}
		for _, p := range boundPairs {
			lo, okLo := num(p[0])
			hi, okHi := num(p[1])
			if okLo && okHi && lo > hi {
				return fmt.Errorf("at %s: %s %v is above %s %v: no value satisfies it", ptr, p[0], x[p[0]], p[1], x[p[1]])
			}
		}
		if lo, ok := num("exclusiveMinimum"); ok {
			if hi, ok := num("exclusiveMaximum"); ok && lo >= hi {
				return fmt.Errorf("at %s: exclusiveMinimum %v is not below exclusiveMaximum %v: no value satisfies it", ptr, x["exclusiveMinimum"], x["exclusiveMaximum"])
			}
			if hi, ok := num("maximum"); ok && lo >= hi {
				return fmt.Errorf("at %s: exclusiveMinimum %v is not below maximum %v: no value satisfies it", ptr, x["exclusiveMinimum"], x["maximum"])
			}
		}
		if lo, ok := num("minimum"); ok {
			if hi, ok := num("exclusiveMaximum"); ok && lo >= hi {
				return fmt.Errorf("at %s: minimum %v is not below exclusiveMaximum %v: no value satisfies it", ptr, x["minimum"], x["exclusiveMaximum"])
			}
		}
		for _, k := range forcedMinimums {
			if n, ok := num(k); ok && n > maxForcedMinimum {
				return fmt.Errorf("at %s: %s %v forces a call to write more than %d of them; a call generated under a grammar must be free to end sooner (a model made to write thousands of characters under a grammar repeats itself, and the runtime stops it)", ptr, k, x[k], maxForcedMinimum)
			}
		}
		if m, ok := num("multipleOf"); ok && m <= 0 {
			return fmt.Errorf("at %s: multipleOf must be above 0, not %v", ptr, x["multipleOf"])
		}
		if req, ok := x["required"].([]any); ok && x["additionalProperties"] == false && x["patternProperties"] == nil {
			props, _ := x["properties"].(map[string]any)
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, described := props[name]; !described {
						return fmt.Errorf("at %s: required names %q, which properties does not describe and additionalProperties false forbids: no value satisfies it", ptr, name)
					}
				}
			}
		}
		if e, ok := x["enum"].([]any); ok && len(e) == 0 {
			return fmt.Errorf("at %s: an empty enum: no value satisfies it", ptr)
		}
		for k, e := range x {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue // values, not schemas
			}
			if err := unsatisfiable(e, ptr+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}
