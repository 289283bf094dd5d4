package engine

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// conversationFiles still speak Ollama's api types, for the conversation (messages,
// tools) and its template rendering, which are yet to move behind the seam (issue 15:
// engine/ollama owns the rendering). The list may only shrink.
var conversationFiles = []string{"prompt.go", "prompt_render.go", "thinking.go", "window.go"}

// TestEngineSpeaksNoOllamaAPI: the engine talks to runtimes through its own types
// (runtime.go); no other file of package engine imports Ollama's api package, so a
// second runtime plugs in without the engine knowing its wire types.
func TestEngineSpeaksNoOllamaAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
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
			if path == "github.com/ollama/ollama/api" && !slices.Contains(conversationFiles, f) {
				t.Errorf("%s imports %s: speak the engine's runtime types (runtime.go) instead", f, path)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: not run in the engine's directory?", checked)
	}
}
