// Command structure measures the shape of the code base: the non-test lines of a
// directory, the methods of each type, and how many lines same-named files in two
// directories share (storage/sqlite and storage/postgres, where shared SQL would be
// written twice). The layering checks read it in review; `make structure` runs it.
//
//	go run ./scripts/structure                # the report
//	go run ./scripts/structure -check         # exit 1 past the limits below
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The limits the layout keeps (docs/architecture.md says why).
const (
	serverLines       = 4500 // the server package's non-test lines
	serverMethods     = 40   // methods on any one type in server/
	anyMethods        = 60   // methods on any one type anywhere
	storeOverlapLimit = 0.15 // shared lines of a same-named sqlite/postgres file pair
)

func main() {
	check := flag.Bool("check", false, "exit 1 when a limit is passed")
	flag.Parse()
	failed := false
	fail := func(format string, args ...any) {
		fmt.Printf("  OVER: "+format+"\n", args...)
		failed = true
	}

	n := goLines("server", false)
	fmt.Printf("server/ non-test lines: %d (limit %d); with its subpackages (console, the front doors): %d\n", n, serverLines, goLines("server", true))
	if n > serverLines {
		fail("server/ has %d lines", n)
	}

	fmt.Println("\ntypes with the most methods:")
	counts := methodCounts(".")
	sort.Slice(counts, func(i, j int) bool { return counts[i].n > counts[j].n })
	for i, c := range counts {
		if i < 10 {
			fmt.Printf("  %4d  %s\n", c.n, c.name)
		}
		limit := anyMethods
		if strings.HasPrefix(c.name, "server.") || strings.HasPrefix(c.name, "server/") {
			limit = serverMethods
		}
		if c.n > limit {
			fail("%s has %d methods (limit %d)", c.name, c.n, limit)
		}
	}

	fmt.Println("\nstorage/sqlite vs storage/postgres, same-named files (shared lines / lines of the smaller;")
	fmt.Println("strict: every line but imports, blanks, comments and lone brackets; code: also without")
	fmt.Println("the lines no logic is in, which two implementations of one interface write alike:")
	fmt.Println("method signatures and bare error returns):")
	strict := map[string]overlap{}
	for _, p := range overlaps("storage/sqlite", "storage/postgres", false) {
		strict[p.name] = p
	}
	for _, p := range overlaps("storage/sqlite", "storage/postgres", true) {
		st := strict[p.name]
		fmt.Printf("  code %5.1f%% (%3d of %3d / %3d)  strict %5.1f%% (%3d of %3d / %3d)  %s\n",
			100*p.ratio, p.shared, p.a, p.b, 100*st.ratio, st.shared, st.a, st.b, p.name)
		if p.ratio > storeOverlapLimit {
			fail("%s shares %.1f%% of its code", p.name, 100*p.ratio)
		}
	}
	if failed && *check {
		os.Exit(1)
	}
}

// goLines counts the lines of the non-test Go files under dir.
func goLines(dir string, recurse bool) int {
	total := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && (!recurse || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			total += strings.Count(string(b), "\n")
		}
		return nil
	})
	return total
}

type typeMethods struct {
	name string
	n    int
}

// methodCounts counts the methods declared on each named type of each package under
// root, test files excluded.
func methodCounts(root string) []typeMethods {
	byType := map[string]int{}
	fset := token.NewFileSet()
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = "hearth"
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			byType[pkg+"."+receiverName(fn.Recv.List[0].Type)]++
		}
		return nil
	})
	out := make([]typeMethods, 0, len(byType))
	for k, v := range byType {
		out = append(out, typeMethods{k, v})
	}
	return out
}

func receiverName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverName(t.X)
	case *ast.IndexExpr:
		return receiverName(t.X)
	case *ast.IndexListExpr:
		return receiverName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

type overlap struct {
	name         string
	shared, a, b int
	ratio        float64
}

// overlaps compares each pair of same-named non-test Go files of two directories: the
// lines (trimmed, blank lines, comments and lone brackets left out; with code, also the
// lines that carry no logic: see noLogic) the two files have in common, counted as a
// multiset, over the lines of the smaller file.
func overlaps(dirA, dirB string, code bool) []overlap {
	var out []overlap
	entries, _ := os.ReadDir(dirA)
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		a, errA := significantLines(filepath.Join(dirA, name), code)
		b, errB := significantLines(filepath.Join(dirB, name), code)
		if errA != nil || errB != nil {
			continue
		}
		count := map[string]int{}
		for _, l := range b {
			count[l]++
		}
		shared := 0
		for _, l := range a {
			if count[l] > 0 {
				count[l]--
				shared++
			}
		}
		smaller := min(len(a), len(b))
		ratio := 0.0
		if smaller > 0 {
			ratio = float64(shared) / float64(smaller)
		}
		out = append(out, overlap{name, shared, len(a), len(b), ratio})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ratio > out[j].ratio })
	return out
}

// noLogic are lines two files write alike without sharing any logic: a method's
// signature (two implementations of one interface have the same ones) and the bare
// forms of Go's error handling and loops.
func noLogic(l string) bool {
	if strings.HasPrefix(l, "func ") {
		return true
	}
	switch l {
	case "if err != nil {", "return err", "return nil", "return nil, err", "return nil, nil",
		"return false, err", "return \"\", err", "continue", "break", "defer rows.Close()", "var (", "} else {":
		return true
	}
	return false
}

func significantLines(path string, code bool) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// The package clause and the imports are not code two files could share.
	skip := 0
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, path, b, parser.ImportsOnly); err == nil {
		skip = fset.Position(f.Name.End()).Line
		for _, d := range f.Decls {
			skip = max(skip, fset.Position(d.End()).Line)
		}
	}
	var out []string
	for i, l := range strings.Split(string(b), "\n") {
		if i < skip {
			continue
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") || strings.Trim(l, "{}()[],;") == "" || code && noLogic(l) {
			continue
		}
		out = append(out, l)
	}
	return out, nil
}
