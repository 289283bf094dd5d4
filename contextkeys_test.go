package hearth_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A context carries cancellation and deadlines, not inputs: what the engine and the
// application core take (the caller, the placement, the cache group, a chain's kept
// build and saved prompt) is given as a value (engine.Inputs, a placement), so that
// every input shows in a signature and a call that forgets one does not compile. The
// only context values left are HTTP plumbing and test harnesses, named here.
var contextValueFiles = []string{
	// The request body's read deadline, set and read by the HTTP boundary alone.
	"server/boundary.go",
	// A test harness timing PostgreSQL round trips per statement.
	"storage/postgres/pgtest/roundtrips.go",
}

// contextValues returns "file:line" for each context.WithValue call in src.
func contextValues(fset *token.FileSet, path string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "WithValue" {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "context" {
			out = append(out, fset.Position(call.Pos()).String())
		}
		return true
	})
	return out, nil
}

// TestNoContextInputs fails on a context.WithValue outside the files named above:
// an input put in a context is one no signature shows.
func TestNoContextInputs(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if slices.Contains(contextValueFiles, filepath.ToSlash(path)) {
			return nil
		}
		at, err := contextValues(fset, path, nil)
		found = append(found, at...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range found {
		t.Errorf("%s: context.WithValue: give the value as an explicit input (a parameter or a field of a request value)", at)
	}
}

// TestNoContextInputsCatches checks the check on a made-up violation: the way the
// engine once took its caller.
func TestNoContextInputsCatches(t *testing.T) {
	const src = `package engine

import "context"

type callerKey struct{}

func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}
`
	at, err := contextValues(token.NewFileSet(), "engine/sealed.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(at) != 1 || !strings.HasPrefix(at[0], "engine/sealed.go:8:") {
		t.Fatalf("found %v, want the one WithValue call at line 8", at)
	}
}
