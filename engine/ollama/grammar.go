package ollama

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ollama/ollama/llama"

	"hearth/internal/schemaguard"
)

// The runtime turns a `format` JSON schema into a grammar with llama.cpp's
// json-schema-to-grammar (llama.SchemaToGrammar, in the server process) and parses that
// grammar when the runner starts sampling (llama.NewGrammar, in the runner). A schema
// that fails either step fails the generation: a 500, or a stream that dies after the
// response was announced. CheckFormat runs both steps on the schema hearth would send,
// with the llama.cpp this binary links: the same code as the embedded runtime, and as
// an external Ollama of the module's version. The schema passes schemaguard first (in
// Go: what would crash or stall the C++ conversion), then the conversion runs in a
// child process (grammarproc.go).

// CheckFormat reports why the runtime could not turn schema into a grammar, or nil.
func (seam) CheckFormat(ctx context.Context, schema []byte) error { return checkGrammar(ctx, schema) }

// checkGrammar reports why the runtime could not turn schema into a grammar, or nil.
func checkGrammar(ctx context.Context, schema []byte) error {
	if err := checkGuard(schema); err != nil {
		return err
	}
	return checker.check(ctx, schema)
}

// checkGuard is schemaguard's check, for the fuzz test to share.
func checkGuard(schema []byte) error { return schemaguard.Check(schema) }

// convertInProcess runs the conversion and the grammar parser in this process: in a
// grammar-check child, or where no child can start. Only for schemas schemaguard
// accepted.
func convertInProcess(schema []byte) error {
	g := llama.SchemaToGrammar(schema)
	if g == nil {
		return errors.New("the runtime's JSON-schema-to-grammar conversion rejects it (an unknown type, a $ref it cannot resolve, or a pattern it cannot translate, such as nested quantifiers)")
	}
	// A repetition whose minimum exceeds its maximum (minLength above maxLength)
	// makes the grammar parser's repetition count wrap around: it allocates until
	// memory runs out instead of failing. Refuse it before parsing.
	if err := checkRepetitions(string(g)); err != nil {
		return err
	}
	gr := llama.NewGrammar(string(g), nil, nil, nil)
	if gr == nil {
		return errors.New("the grammar converted from it does not parse (an empty anyOf, or a repetition bound above the runtime's limit of 2000)")
	}
	gr.Free()
	return nil
}

// checkRepetitions finds a {m,n} repetition with m > n outside the grammar's quoted
// literals and character classes.
func checkRepetitions(g string) error {
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '"', '[':
			end := byte('"')
			if g[i] == '[' {
				end = ']'
			}
			for i++; i < len(g) && g[i] != end; i++ {
				if g[i] == '\\' {
					i++
				}
			}
		case '{':
			j := i + 1
			for j < len(g) && g[j] >= '0' && g[j] <= '9' {
				j++
			}
			if j == i+1 || j >= len(g) || g[j] != ',' {
				continue
			}
			k := j + 1
			for k < len(g) && g[k] >= '0' && g[k] <= '9' {
				k++
			}
			if k == j+1 || k >= len(g) || g[k] != '}' {
				continue
			}
			lo, err1 := strconv.ParseUint(g[i+1:j], 10, 64)
			hi, err2 := strconv.ParseUint(g[j+1:k], 10, 64)
			if err1 != nil || err2 != nil || lo > hi {
				return fmt.Errorf("it asks for between %s and %s repetitions (a minimum such as minLength or minItems above its maximum)", g[i+1:j], g[j+1:k])
			}
		}
	}
	return nil
}
