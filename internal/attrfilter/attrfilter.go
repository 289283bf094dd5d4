// Package attrfilter reads and applies the attribute filters of a vector store search
// (OpenAI's shapes): a comparison {"type": "eq"|"ne"|"gt"|"gte"|"lt"|"lte"|"in"|"nin",
// "key", "value"} or a compound {"type": "and"|"or", "filters": [...]} of them, nested.
//
// A comparison on a key the attributes lack is false, except ne and nin, which are
// true (the attribute is not equal to the value). Order comparisons (gt, gte, lt,
// lte) compare numbers with numbers and strings with strings; any other pair is false.
// eq and in compare a number with a number by value, whatever its JSON spelling.
package attrfilter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Filter is a parsed filter.
type Filter struct {
	Op      string // eq ne gt gte lt lte in nin, or and or
	Key     string
	Value   any // a string, float64 or bool; a []any of them for in and nin
	Filters []*Filter
}

// Error is a filter that cannot be read: Param names the field (filters.filters[1].type).
type Error struct {
	Param   string
	Message string
}

func (e *Error) Error() string { return e.Param + ": " + e.Message }

// maxDepth bounds nesting, so a hostile filter cannot cost a deep recursion.
const maxDepth = 16

// Parse reads a filter; param is its field's name in the request ("filters").
func Parse(raw json.RawMessage, param string) (*Filter, error) { return parse(raw, param, 0) }

func parse(raw json.RawMessage, param string, depth int) (*Filter, error) {
	if depth > maxDepth {
		return nil, &Error{param, fmt.Sprintf("filters nest at most %d deep", maxDepth)}
	}
	var obj struct {
		Type    *string           `json:"type"`
		Key     *string           `json:"key"`
		Value   json.RawMessage   `json:"value"`
		Filters []json.RawMessage `json:"filters"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return nil, &Error{param, "expected a comparison {type, key, value} or a compound {type, filters}: " + err.Error()}
	}
	if obj.Type == nil {
		return nil, &Error{param + ".type", "missing"}
	}
	f := &Filter{Op: *obj.Type}
	switch f.Op {
	case "and", "or":
		if obj.Key != nil || obj.Value != nil {
			return nil, &Error{param, "a compound filter has type and filters only"}
		}
		if len(obj.Filters) == 0 {
			return nil, &Error{param + ".filters", "expected at least one filter"}
		}
		for i, sub := range obj.Filters {
			g, err := parse(sub, fmt.Sprintf("%s.filters[%d]", param, i), depth+1)
			if err != nil {
				return nil, err
			}
			f.Filters = append(f.Filters, g)
		}
		return f, nil
	case "eq", "ne", "gt", "gte", "lt", "lte", "in", "nin":
	default:
		return nil, &Error{param + ".type", fmt.Sprintf("'%s' is not one of eq, ne, gt, gte, lt, lte, in, nin, and, or", capped(f.Op))}
	}
	if obj.Filters != nil {
		return nil, &Error{param, "a comparison has type, key and value only"}
	}
	if obj.Key == nil || *obj.Key == "" {
		return nil, &Error{param + ".key", "missing"}
	}
	f.Key = *obj.Key
	if len(obj.Value) == 0 {
		return nil, &Error{param + ".value", "missing"}
	}
	var v any
	if err := json.Unmarshal(obj.Value, &v); err != nil {
		return nil, &Error{param + ".value", err.Error()}
	}
	if f.Op == "in" || f.Op == "nin" {
		list, ok := v.([]any)
		if !ok {
			return nil, &Error{param + ".value", f.Op + " takes an array of strings, numbers or booleans"}
		}
		for _, x := range list {
			if !scalar(x) {
				return nil, &Error{param + ".value", f.Op + " takes an array of strings, numbers or booleans"}
			}
		}
	} else if !scalar(v) {
		return nil, &Error{param + ".value", "expected a string, a number or a boolean"}
	}
	f.Value = v
	return f, nil
}

func scalar(v any) bool {
	switch v.(type) {
	case string, float64, bool:
		return true
	}
	return false
}

func capped(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// Match reports whether attributes (a file's, decoded from JSON) pass the filter.
func (f *Filter) Match(attrs map[string]any) bool {
	switch f.Op {
	case "and":
		for _, g := range f.Filters {
			if !g.Match(attrs) {
				return false
			}
		}
		return true
	case "or":
		for _, g := range f.Filters {
			if g.Match(attrs) {
				return true
			}
		}
		return false
	}
	have, ok := attrs[f.Key]
	switch f.Op {
	case "ne":
		return !ok || !equal(have, f.Value)
	case "nin":
		return !ok || !contains(f.Value.([]any), have)
	}
	if !ok {
		return false
	}
	switch f.Op {
	case "eq":
		return equal(have, f.Value)
	case "in":
		return contains(f.Value.([]any), have)
	}
	c, ok := compare(have, f.Value)
	if !ok {
		return false
	}
	switch f.Op {
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	default: // lte
		return c <= 0
	}
}

func equal(a, b any) bool {
	c, ok := compare(a, b)
	if ok {
		return c == 0
	}
	ab, aok := a.(bool)
	bb, bok := b.(bool)
	return aok && bok && ab == bb
}

func contains(list []any, v any) bool {
	for _, x := range list {
		if equal(v, x) {
			return true
		}
	}
	return false
}

// compare orders two numbers or two strings; ok is false for any other pair.
func compare(a, b any) (int, bool) {
	switch a := a.(type) {
	case float64:
		if b, ok := b.(float64); ok {
			switch {
			case a < b:
				return -1, true
			case a > b:
				return 1, true
			}
			return 0, true
		}
	case string:
		if b, ok := b.(string); ok {
			return strings.Compare(a, b), true
		}
	}
	return 0, false
}
