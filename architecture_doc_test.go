package hearth_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// declared is what the module's Go files declare: every package by directory and by
// name, and every name a package declares (functions, types, methods and fields as
// Type.Name, variables, constants, interface methods).
type declared struct {
	dirs map[string]bool
	// std are the names of the standard library and third-party packages the module
	// imports (errors, io, pgx): a doc may name their identifiers.
	std map[string]bool
	// imported are the import paths of those packages (database/sql).
	imported map[string]bool
	byPkg    map[string]map[string]bool // package name -> names
	anyName  map[string]bool
}

func declaredNames(t *testing.T) declared {
	t.Helper()
	d := declared{dirs: map[string]bool{}, std: map[string]bool{}, imported: map[string]bool{}, byPkg: map[string]map[string]bool{}, anyName: map[string]bool{}}
	for _, f := range moduleFiles(t) {
		d.dirs[f.dir] = true
		for _, ip := range f.imports {
			if ip != modulePath && !strings.HasPrefix(ip, modulePath+"/") {
				d.std[ip[strings.LastIndex(ip, "/")+1:]] = true
				d.imported[ip] = true
			}
		}
		file, err := parser.ParseFile(token.NewFileSet(), filepath.FromSlash(f.path), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkg := file.Name.Name
		if f.dir == "" {
			pkg = "hearth"
		}
		names := d.byPkg[pkg]
		if names == nil {
			names = map[string]bool{}
			d.byPkg[pkg] = names
		}
		add := func(n string) { names[n], d.anyName[n] = true, true }
		for _, decl := range file.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				add(decl.Name.Name)
				if decl.Recv != nil && len(decl.Recv.List) > 0 {
					add(receiverType(decl.Recv.List[0].Type) + "." + decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						add(spec.Name.Name)
						addMembers(spec.Name.Name, spec.Type, add)
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							add(n.Name)
						}
					}
				}
			}
		}
	}
	return d
}

func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

func addMembers(typ string, e ast.Expr, add func(string)) {
	var fields *ast.FieldList
	switch t := e.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	}
	if fields == nil {
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			add(typ + "." + n.Name)
			add(n.Name)
		}
		if len(f.Names) == 0 { // an embedded type: its name is the field's
			if n := receiverType(f.Type); n != "" {
				add(typ + "." + n)
			}
		}
	}
}

var (
	// docFile is a Go file path as the doc writes it: server/responses.go, builder.go.
	docFile = regexp.MustCompile(`(?:^|[\s(\x60,])((?:[a-z0-9_]+/)*[a-z0-9_]+\.go)\b`)
	// docCode is an inline code span.
	docCode = regexp.MustCompile("`([^`\n]+)`")
	// goName is an identifier or a qualified one (pkg.Name, Type.Method, pkg.Type.Method).
	goName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}$`)
)

// codeLike reports whether an inline code span names Go code rather than a JSON field,
// an HTTP path or a word: a qualified name, or a name in camelCase or exported.
func codeLike(s string) bool {
	if !goName.MatchString(s) || strings.Contains(s, "_") {
		return false
	}
	if strings.Contains(s, ".") {
		return true
	}
	for i, r := range s {
		if unicode.IsUpper(r) && (i == 0 || unicode.IsLower(rune(s[i-1]))) {
			return true
		}
	}
	return false
}

// docChecks are the names a doc states that the code must declare.
func (d declared) check(name string) bool {
	parts := strings.Split(name, ".")
	if len(parts) > 1 && !d.declaresPackage(parts[0]) &&
		(d.std[parts[0]] || !d.anyName[parts[0]] && unicode.IsLower(rune(parts[0][0]))) {
		return true // another module's name (errors.Is), or a JSON path or event (error.param)
	}
	switch len(parts) {
	case 1:
		return d.anyName[name]
	case 2:
		if names, ok := d.byPkg[parts[0]]; ok && names[parts[1]] {
			return true // pkg.Name
		}
		return d.anyName[name] // Type.Member
	default:
		names, ok := d.byPkg[parts[0]]
		return ok && names[parts[1]+"."+parts[2]] // pkg.Type.Member
	}
}

func (d declared) declaresPackage(name string) bool {
	_, ok := d.byPkg[name]
	return ok
}

// TestArchitectureDocNames: docs/architecture.md walks a request through the code by
// name; every file, package and identifier it names exists, so the walk cannot go stale
// unnoticed when code moves.
func TestArchitectureDocNames(t *testing.T) {
	checkDocNames(t, filepath.Join("docs", "architecture.md"))
}

func checkDocNames(t *testing.T, doc string) {
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	d := declaredNames(t)
	for _, m := range docFile.FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.FromSlash(m[1])); err != nil {
			t.Errorf("%s names the file %s, which does not exist", doc, m[1])
		}
	}
	checked := 0
	for _, m := range docCode.FindAllStringSubmatch(text, -1) {
		span := strings.TrimSuffix(strings.TrimSpace(m[1]), "()")
		switch {
		case strings.HasSuffix(span, ".go"):
			continue // checked above
		case strings.HasSuffix(span, ".json") || strings.HasSuffix(span, ".mod") || strings.HasSuffix(span, ".md"):
			if _, err := os.Stat(filepath.FromSlash(span)); err != nil && !strings.Contains(span, "/") {
				continue // a file of a user's, not the repository's
			}
		case d.dirs[span] || strings.HasSuffix(span, "/") && d.dirs[strings.TrimSuffix(span, "/")]:
			checked++
		case regexp.MustCompile(`^[a-z0-9]+(/[a-z0-9]+)+/?$`).MatchString(span):
			// a package path: internal/admission, storage/sqlite (or one the module imports)
			if _, err := os.Stat(filepath.FromSlash(span)); err != nil && !d.imported[span] {
				t.Errorf("%s names the package %s, which does not exist", doc, span)
			}
			checked++
		case codeLike(span):
			if !d.check(span) {
				t.Errorf("%s names %s, which the code does not declare", doc, span)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("%s: only %d names checked: is the walk still there?", doc, checked)
	}
}

// TestDocNamesCatchStaleNames: the check fails on names that do not exist.
func TestDocNamesCatchStaleNames(t *testing.T) {
	d := declaredNames(t)
	for _, name := range []string{"storage.Chains.LoadTheWholeChain", "Server.noSuchMethod", "engine.NoSuchThing", "NoSuchType.Field"} {
		if d.check(name) {
			t.Errorf("%s passes the check but is declared nowhere", name)
		}
	}
	for _, name := range []string{"engine.Prepare", "hearth.Builder", "Builder.Queue", "engine.Runtime", "errors.Is", "error.param"} {
		if !d.check(name) {
			t.Errorf("%s fails the check but is declared", name)
		}
	}
}
