package engine

// A `format` JSON schema the runtime cannot turn into a grammar fails the generation:
// a 500, or a stream that dies after the response was announced. The engine asks the
// runtime (Runtime.CheckFormat) about every schema it would send, so that such a schema
// is a 400 before anything is stored or generated, and remembers the answers.

// maxGrammarCache bounds Engine.grammars; when full it starts over.
const maxGrammarCache = 512

// rememberGrammar returns check's answer for key, running it once per key.
func (e *Engine) rememberGrammar(key string, check func() error) error {
	e.mu.Lock()
	err, ok := e.grammars[key]
	e.mu.Unlock()
	if ok {
		return err
	}
	err = check()
	e.mu.Lock()
	if len(e.grammars) >= maxGrammarCache {
		clear(e.grammars)
	}
	e.grammars[key] = err
	e.mu.Unlock()
	return err
}

// CheckFormat reports why the runtime could not turn schema, a `format` JSON schema,
// into a grammar, or nil. The /api passthrough checks formats with it too: a schema the
// grammar parser cannot take fails the generation at best, and one with a repetition
// whose minimum exceeds its maximum makes the runner allocate until it is killed.
func (e *Engine) CheckFormat(schema []byte) error {
	return e.rememberGrammar("format\x00"+string(schema), func() error { return e.rt.CheckFormat(schema) })
}
