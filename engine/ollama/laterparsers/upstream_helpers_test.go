package laterparsers

import (
	"github.com/ollama/ollama/model/parsers"
)

// What the tests ported from Ollama v0.32.15's model/parsers take from the rest of
// that package's parsers.go, here over this package's registration (its
// testhelpers_test.go is copied as it is).

// Parser is the module's parser interface, which the copies implement.
type Parser = parsers.Parser

// ParserForName is the module's registry lookup, which finds this package's parsers
// under their names; poolside-v1's LagunaV8Parser, which the laguna tests use too, is
// not registered here (v0.24.0 has no such parser; see laterrenderers), so it is built
// directly.
func ParserForName(name string) Parser {
	if name == "poolside-v1" {
		return &LagunaV8Parser{}
	}
	return parsers.ParserForName(name)
}
