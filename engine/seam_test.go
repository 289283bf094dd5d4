package engine

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineSpeaksNoOllamaAPI: the engine talks to runtimes through its own types
// (runtime.go: generation, model info, prompt rendering, format checks); no file of
// package engine, tests included, imports anything of Ollama's module, so a second
// runtime plugs in without the engine knowing its wire types. engine/ollama (its own
// package) holds the Ollama side: the API client, template rendering, llama.cpp's
// grammar check.
func TestEngineSpeaksNoOllamaAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/ollama/ollama" || strings.HasPrefix(path, "github.com/ollama/ollama/") {
				t.Errorf("%s imports %s: speak the engine's runtime types (runtime.go) instead", f, path)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d files: not run in the engine's directory?", checked)
	}
}
