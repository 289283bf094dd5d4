// Package chattemplate renders a model's own chat template (the Jinja text a model's
// makers publish in its GGUF file and tokenizer_config.json) the way Hugging Face's
// apply_chat_template does: the same variables, the same environment (trim_blocks and
// lstrip_blocks on, loop controls), and the same globals and filters (raise_exception,
// strftime_now, and tojson as json.dumps with ensure_ascii off), so that the prompt is
// byte for byte the one Python's Jinja2 renders.
//
// The Jinja engine is github.com/ardanlabs/jinja (chosen by measured parity and speed,
// see docs/templates.md). Where it differs from Hugging Face's environment this package
// wraps it instead of changing it: the globals are shadowed by the render's own
// variables, and each `| tojson` of a template is compiled into a call of this
// package's encoder, because the library has no way to register a filter.
package chattemplate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ardanlabs/jinja"
)

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	source   string
	compiled *jinja.Template
	// shareValues says the template cannot change the values it is handed, so the
	// messages' converted values may be shared between renders (valuecache.go).
	shareValues bool
}

// Source is the template text as the model published it.
func (t *Template) Source() string { return t.source }

// cache holds compiled templates by the hash of their text: a model's template does not
// change between turns, so each is parsed once per process.
var cache sync.Map // [32]byte -> *Template

// Compile parses a chat template, or returns the one already compiled from the same text.
func Compile(source string) (*Template, error) {
	key := sha256.Sum256([]byte(source))
	if t, ok := cache.Load(key); ok {
		return t.(*Template), nil
	}
	c, err := compile(source)
	if err != nil {
		return nil, err
	}
	t, _ := cache.LoadOrStore(key, c)
	return t.(*Template), nil
}

// compile parses a template without the cache.
func compile(source string) (*Template, error) {
	rewritten, err := prepare(jinja2Source(source))
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	c, err := jinja.Compile(rewritten)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return &Template{source: source, compiled: c, shareValues: !mutatesValues(source)}, nil
}

// jinja2Source is the text as Jinja2's lexer reads it: line ends normalised to "\n"
// (newline_sequence) and one final newline dropped (keep_trailing_newline off).
func jinja2Source(s string) string {
	if strings.Contains(s, "\r") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return strings.TrimSuffix(s, "\n")
}

// TemplateError is the error a template raises itself (raise_exception): the template
// refuses the conversation (a role it does not know, a system message out of place), a
// fault of the request, not of hearth.
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return e.Message }

// IsTemplateError reports whether err is (or wraps) a template's own raise_exception.
func IsTemplateError(err error) bool {
	var te *TemplateError
	return errors.As(err, &te)
}

// Render renders the template over in. The error of a template's raise_exception is a
// *TemplateError.
func (t *Template) Render(in Inputs) (string, error) {
	vars := in.values(t.shareValues)
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	var raised *TemplateError
	vars["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := ""
		if len(args) > 0 {
			msg = str(args[0])
		}
		raised = &TemplateError{Message: msg}
		return jinja.Undefined(), raised
	})
	vars["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		return jinja.NewString(strftime(now, args[0].AsString())), nil
	})
	vars[tojsonFunc] = tojsonCallable
	vars[stringFunc] = stringCallable
	vars[printFunc] = printCallable
	out, err := t.compiled.RenderValues(vars)
	if err != nil {
		if raised != nil {
			return "", raised
		}
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// str is how Python's str() shows a value a template hands raise_exception.
func str(v jinja.Value) string {
	if v.IsString() {
		return v.AsString()
	}
	return v.String()
}
