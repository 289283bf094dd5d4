package engine

import (
	"context"
	"crypto/sha256"
	"errors"

	"hearth/toolgrammar"
)

// A `format` JSON schema the runtime cannot turn into a grammar fails the generation:
// a 500, or a stream that dies after the response was announced. The engine asks the
// runtime (Runtime.CheckFormat) about every schema it would send, so that such a schema
// is a 400 before anything is stored or generated, and remembers the answers.

// maxGrammarCache bounds Engine.grammars; when full it starts over. Entries are keyed
// by a hash of the schema, never the schema itself, so the cache holds a few dozen
// kilobytes however large the schemas it saw (a count bound over whole schemas let
// requests pin hundreds of megabytes).
const maxGrammarCache = 512

// grammarKey names one check: a format schema, or a tool's parameters by tool name.
type grammarKey [sha256.Size]byte

// rememberGrammar returns check's answer for key, running it once per key. An answer
// cut short by ctx (the client left) is not remembered.
func (e *Engine) rememberGrammar(ctx context.Context, key grammarKey, check func() error) error {
	e.mu.Lock()
	err, ok := e.grammars[key]
	e.mu.Unlock()
	if ok {
		return err
	}
	err = check()
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	e.mu.Lock()
	if len(e.grammars) >= maxGrammarCache {
		clear(e.grammars)
	}
	e.grammars[key] = err
	e.mu.Unlock()
	return err
}

func keyOf(parts ...string) grammarKey {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var k grammarKey
	h.Sum(k[:0])
	return k
}

// CheckFormat reports why the runtime could not turn schema, a `format` JSON schema,
// into a grammar, or nil. The /api passthrough checks formats with it too: a schema the
// grammar parser cannot take fails the generation at best, and one with a repetition
// whose minimum exceeds its maximum makes the runner allocate until it is killed.
func (e *Engine) CheckFormat(ctx context.Context, schema []byte) error {
	return e.rememberGrammar(ctx, keyOf("format", string(schema)), func() error { return e.rt.CheckFormat(ctx, schema) })
}

// checkToolGrammar reports why the runtime could not generate a call of t under a
// grammar of its parameters, or nil. The schema is built from the tool's name and
// parameters alone.
func (e *Engine) checkToolGrammar(ctx context.Context, t toolgrammar.Tool) error {
	return e.rememberGrammar(ctx, keyOf("tool", t.Name, string(t.Parameters)), func() error {
		if err := checkToolSchema(t); err != nil {
			return err
		}
		schema, err := toolgrammar.ArgumentsSchema(t)
		if err != nil {
			return err
		}
		return e.rt.CheckFormat(ctx, schema)
	})
}
