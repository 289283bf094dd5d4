package hearth_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The import rules of the module: who may import which dependency, and the floors. A
// package may import packages on its own floor or below, never above; each of the
// dependencies below is imported by its one seam package (and the few named files that
// must speak its API directly). Test files are held to the same rules, except that any
// test file may import a harness (a package that exists to start real parts for tests).
//
// A new package needs a floor here, and a new importer of a listed dependency an entry:
// the test fails until the change is deliberate.

// floors are the layers of the module, lowest first. A package's floor is that of the
// longest entry its directory is, or is under; the module root ("") matches itself only.
var floors = []struct {
	dir   string
	floor int
}{
	// Leaf helpers: the standard library and third-party modules only.
	{"internal", 0},
	// The seam to OpenTelemetry traces: on the lowest floor, since every layer (the
	// engine's phases, the core's lifecycle, the server's requests) starts spans in it.
	{"internal/tracing", 0},
	// Chat templates rendered as Hugging Face renders them (the Jinja library only).
	{"engine/chattemplate", 0},
	// The Open Responses domain types.
	{"", 1},
	// Model text -> items, pure.
	{"toolgrammar", 2},
	// Deterministic script models (for tests, `hearth script-models`, the bench).
	{"scriptmodel", 3},
	// Runs one response over the runtime interface.
	{"engine", 4},
	// Runtimes, and several runtimes as one.
	{"engine/ollama", 5},
	{"engine/pool", 5},
	// Test support that starts a real runtime with the script models (a harness).
	{"engine/ollama/testenv", 6},
	// Hosted tool kinds and the store.
	{"mcp", 6},
	{"websearch", 6},
	{"filesearch", 6},
	{"toolsearch", 6},
	{"storage", 6},
	// The binary records every store writes alike (packs, checkpoints, journal
	// batches): the store's own types only, no driver.
	{"storage/record", 6},
	// Files and vector stores as a service (ingestion, index, search), handed to the
	// file_search kind: no HTTP server, nothing of server.
	{"vectorstores", 7},
	// The application core: making a response as a service, not HTTP (no Gin, nothing
	// of the server). Floor 7 is left to the services it is given (vector stores).
	{"respond", 8},
	// What hearth reports of itself: the Prometheus series, their model labels.
	{"telemetry", 8},
	// HTTP.
	{"server/console", 9},
	// Front doors: other APIs over the core (server/door is what the server lends them).
	{"server/door", 9},
	{"server/chatcompletions", 9},
	{"server/anthropic", 9},
	{"server", 10},
	// Commands and what only they run (the bench harness, the wiring that builds
	// hearth's parts: cmd/hearth/wire); the build's scripts.
	{"cmd", 11},
	{"scripts", 11},
}

// harnesses may be imported by any test file, whatever its floor.
var harnesses = []string{"engine/ollama/testenv", "storage/postgres/pgtest"}

// upwardTests are test files that import packages above their own, by name: tests
// of a higher package's behaviour that need the lower one's test fakes.
var upwardTests = map[string][]string{
	// The MCP hosted kind's control flow through the engine, on the engine's fake runtime
	// (approvals too); a kind of the test's own reports its calls with MCP's items.
	"engine/hosted_test.go":   {"mcp"},
	"engine/approval_test.go": {"mcp"},
	"engine/kind_test.go":     {"mcp"},
	// The root's decode, marshal, stream and official schema tests, with the hosted
	// kinds registered as `hearth serve` wires them.
	"registry_test.go": kinds,
}

// upwardTestDirs are packages whose test files may import packages above them: server's
// end-to-end tests start hearth as `hearth serve` wires it (cmd/hearth/wire), so that
// they run the parts as the command builds them.
var upwardTestDirs = map[string][]string{
	"server": {"cmd/hearth/wire"},
}

func upwardTest(f goFile, dir string) bool {
	return slices.Contains(upwardTests[f.path], dir) || slices.Contains(upwardTestDirs[f.dir], dir)
}

// kinds are the hosted kind packages: each is whole in itself, so none imports
// another (what two kinds share is the root's).
var kinds = []string{"mcp", "websearch", "filesearch", "toolsearch"}

// kindOf is the kind package dir is, or is under ("" for none).
func kindOf(dir string) string {
	for _, k := range kinds {
		if under(dir, k) {
			return k
		}
	}
	return ""
}

// dependencyRules say who may import a module outside hearth: packages (a directory and
// everything under it) and single files (their path from the module root).
var dependencyRules = []struct {
	module string
	// why is what the importers have in common.
	why       string
	importers []string
}{
	{
		module: "github.com/mattn/go-sqlite3",
		why:    "the SQLite store",
		importers: []string{
			"storage/sqlite",
		},
	},
	// database/sql is how the SQL stores talk (SQLite through it; the shared layer
	// for its errors): nothing above the store speaks SQL.
	{module: "database/sql", why: "the SQL stores", importers: []string{"storage/sqlite", "storage/sqlstore", "storage/postgres"}},
	{module: "github.com/jackc/pgx", why: "the PostgreSQL store", importers: []string{"storage/postgres",
		// The copy's end-to-end test changes a copied row behind the store's back, to
		// show that the check after a copy catches it.
		"cmd/hearth/dbcopy_test.go"}},
	{module: "github.com/pdfcpu/pdfcpu", why: "reading the text of PDFs a client hands a model", importers: []string{"internal/filetext"}},
	// Spans are started through internal/tracing's small API: the SDK, the exporter
	// and the W3C propagator stay behind it (and its Jaeger harness speaks only HTTP).
	{module: "go.opentelemetry.io/otel", why: "OpenTelemetry traces", importers: []string{"internal/tracing"}},
	{module: "github.com/modelcontextprotocol/go-sdk", why: "the MCP hosted tool kind", importers: []string{"mcp"}},
	{module: "github.com/gin-gonic/gin", why: "hearth's router, and the embedded Ollama's",
		importers: []string{"server", "engine/ollama"}},
	{
		module: "github.com/ollama/ollama",
		why:    "the Ollama runtime, the script models built in its formats, and what speaks its API",
		importers: []string{
			"engine/ollama", // the runtime seam, and testenv under it
			"scriptmodel",   // writes GGUF files and creates models through Ollama's API
			// The CLI's client of Ollama's API through hearth (pull, models, doctor).
			"cmd/hearth/client.go", "cmd/hearth/pull.go",
			// The bench drives the runtime's own /api/generate, the floor it measures against.
			"cmd/hearth/bench",
			// Tests that create models over Ollama's API, as a user's ollama client would.
			"cmd/hearth/fault_test.go", "cmd/hearth/isolation_test.go", "cmd/hearth/serve_test.go",
			"cmd/hearth/cuda_fallback_test.go", "cmd/hearth/postgres_e2e_test.go", "cmd/hearth/dbcopy_test.go",
			"cmd/hearth/doctor_test.go", "cmd/hearth/show_test.go",
			// Server tests that speak Ollama's API through the /api passthrough.
			"server/passthrough_e2e_test.go", "server/security_e2e_test.go", "server/vision_e2e_test.go",
			"server/gpu_e2e_test.go",
			// Server tests over a fake Ollama client (engine/ollama renders their prompts
			// with the real templates).
			"server/fuzz_http_test.go", "server/hotchains_test.go", "server/checkpoint_cache_test.go",
			"server/overhead_bench_test.go",
		},
	},
}

const modulePath = "hearth"

// goFile is one Go file of the module and what it imports.
type goFile struct {
	path    string // from the module root, with slashes
	dir     string // its package's directory ("" for the root)
	test    bool
	imports []string
}

// moduleFiles parses the imports of every Go file of the module, as the go command sees
// the tree: testdata, hidden and _-prefixed directories and nested modules are not part of it.
func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	var files []goFile
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != "." && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		gf := goFile{path: filepath.ToSlash(p), dir: filepath.ToSlash(filepath.Dir(p)), test: strings.HasSuffix(p, "_test.go")}
		if gf.dir == "." {
			gf.dir = ""
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			gf.imports = append(gf.imports, ip)
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// floorOf is the floor of the package in dir, false when no entry of floors covers it.
func floorOf(dir string) (int, bool) {
	best, floor := -1, 0
	for _, f := range floors {
		covers := dir == f.dir || f.dir != "" && strings.HasPrefix(dir, f.dir+"/")
		if covers && len(f.dir) > best {
			best, floor = len(f.dir), f.floor
		}
	}
	return floor, best >= 0
}

// under reports whether p is dir or a path under it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// violations are the files that break the rules, one line each.
func violations(files []goFile) []string {
	var out []string
	for _, f := range files {
		floor, ok := floorOf(f.dir)
		if !ok {
			out = append(out, fmt.Sprintf("%s: package %q has no floor: give it one in importrules_test.go", f.path, f.dir))
			continue
		}
		for _, ip := range f.imports {
			if ip == modulePath || strings.HasPrefix(ip, modulePath+"/") {
				dir := strings.TrimPrefix(strings.TrimPrefix(ip, modulePath), "/")
				to, ok := floorOf(dir)
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("%s imports %s, which has no floor", f.path, ip))
				case to > floor && !(f.test && (slices.Contains(harnesses, dir) || upwardTest(f, dir))):
					out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d): no package imports one above it", f.path, floor, ip, to))
				case kindOf(f.dir) != "" && kindOf(dir) != "" && kindOf(f.dir) != kindOf(dir):
					out = append(out, fmt.Sprintf("%s imports %s: a hosted kind imports no other kind", f.path, ip))
				}
				continue
			}
			for _, r := range dependencyRules {
				if ip != r.module && !strings.HasPrefix(ip, r.module+"/") {
					continue
				}
				allowed := slices.ContainsFunc(r.importers, func(imp string) bool {
					if strings.HasSuffix(imp, ".go") {
						return f.path == imp
					}
					return under(f.dir, imp)
				})
				if !allowed {
					out = append(out, fmt.Sprintf("%s imports %s: only %s may (%s)", f.path, ip, strings.Join(r.importers, ", "), r.why))
				}
			}
		}
	}
	return out
}

// TestImportRules: the module keeps its floors and its dependencies in their seams.
func TestImportRules(t *testing.T) {
	files := moduleFiles(t)
	if len(files) < 300 {
		t.Fatalf("found only %d Go files: not run from the module root?", len(files))
	}
	for _, v := range violations(files) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations: the rules fail on each kind of new violation (on
// made-up files), and pass on what the module already does.
func TestImportRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		file goFile
		bad  bool
	}{
		{"the server imports Ollama", goFile{path: "server/names.go", dir: "server", imports: []string{"github.com/ollama/ollama/types/model"}}, true},
		{"the engine imports Ollama in a test", goFile{path: "engine/x_test.go", dir: "engine", test: true, imports: []string{"github.com/ollama/ollama/api"}}, true},
		{"the engine imports gin", goFile{path: "engine/x.go", dir: "engine", imports: []string{"github.com/gin-gonic/gin"}}, true},
		{"the engine imports the OpenTelemetry SDK", goFile{path: "engine/x.go", dir: "engine", imports: []string{"go.opentelemetry.io/otel/trace"}}, true},
		{"the engine starts spans through the seam", goFile{path: "engine/x.go", dir: "engine", imports: []string{"hearth/internal/tracing"}}, false},
		{"the server speaks SQL", goFile{path: "server/db.go", dir: "server", imports: []string{"database/sql"}}, true},
		{"the core speaks SQL", goFile{path: "respond/db.go", dir: "respond", imports: []string{"database/sql"}}, true},
		{"the vector stores service speaks SQL", goFile{path: "vectorstores/db.go", dir: "vectorstores", imports: []string{"database/sql"}}, true},
		{"telemetry imports the server", goFile{path: "telemetry/x.go", dir: "telemetry", imports: []string{"hearth/server"}}, true},
		{"the server imports SQLite", goFile{path: "server/db.go", dir: "server", imports: []string{"github.com/mattn/go-sqlite3"}}, true},
		{"the server imports pgx", goFile{path: "server/db.go", dir: "server", imports: []string{"github.com/jackc/pgx/v5"}}, true},
		{"the engine imports the MCP SDK", goFile{path: "engine/mcp.go", dir: "engine", imports: []string{"github.com/modelcontextprotocol/go-sdk/mcp"}}, true},
		{"a leaf imports the server", goFile{path: "internal/seal/x.go", dir: "internal/seal", imports: []string{"hearth/server"}}, true},
		{"a leaf's test imports the domain", goFile{path: "internal/seal/x_test.go", dir: "internal/seal", test: true, imports: []string{"hearth"}}, true},
		{"an engine test imports a hosted kind", goFile{path: "engine/x_test.go", dir: "engine", test: true, imports: []string{"hearth/mcp"}}, true},
		{"the named engine test imports the MCP kind", goFile{path: "engine/hosted_test.go", dir: "engine", test: true, imports: []string{"hearth/mcp"}}, false},
		{"a kind imports another kind", goFile{path: "websearch/x.go", dir: "websearch", imports: []string{"hearth/mcp"}}, true},
		{"a kind's test imports another kind", goFile{path: "toolsearch/x_test.go", dir: "toolsearch", test: true, imports: []string{"hearth/mcp"}}, true},
		{"a root test imports a kind", goFile{path: "x_test.go", dir: "", test: true, imports: []string{"hearth/mcp"}}, true},
		{"the root's registry test imports the kinds", goFile{path: "registry_test.go", dir: "", test: true, imports: []string{"hearth/mcp", "hearth/toolsearch"}}, false},
		{"a kind's test helper package imports its kind", goFile{path: "mcp/mcptest/x.go", dir: "mcp/mcptest", imports: []string{"hearth/mcp"}}, false},
		{"the engine imports a runtime", goFile{path: "engine/x.go", dir: "engine", imports: []string{"hearth/engine/ollama"}}, true},
		{"the store imports the server", goFile{path: "storage/sqlite/x.go", dir: "storage/sqlite", imports: []string{"hearth/server"}}, true},
		{"the engine imports the harness outside a test", goFile{path: "engine/x.go", dir: "engine", imports: []string{"hearth/engine/ollama/testenv"}}, true},
		{"a package without a floor", goFile{path: "nofloor/x.go", dir: "nofloor", imports: []string{"hearth/engine"}}, true},
		{"the core imports the server", goFile{path: "respond/x.go", dir: "respond", imports: []string{"hearth/server"}}, true},
		{"the core imports the console", goFile{path: "respond/x.go", dir: "respond", imports: []string{"hearth/server/console"}}, true},
		{"the core imports gin", goFile{path: "respond/x.go", dir: "respond", imports: []string{"github.com/gin-gonic/gin"}}, true},
		{"the core imports a SQL driver", goFile{path: "respond/x.go", dir: "respond", imports: []string{"github.com/mattn/go-sqlite3"}}, true},
		{"the core's test imports the server", goFile{path: "respond/x_test.go", dir: "respond", test: true, imports: []string{"hearth/server"}}, true},
		{"the shared SQL layer imports pgx", goFile{path: "storage/sqlstore/x.go", dir: "storage/sqlstore", imports: []string{"github.com/jackc/pgx/v5"}}, true},
		{"the shared SQL layer imports go-sqlite3", goFile{path: "storage/sqlstore/x.go", dir: "storage/sqlstore", imports: []string{"github.com/mattn/go-sqlite3"}}, true},
		{"a new server test speaks Ollama's API", goFile{path: "server/new_e2e_test.go", dir: "server", test: true, imports: []string{"github.com/ollama/ollama/api"}}, true},
		{"the vector stores service imports gin", goFile{path: "vectorstores/x.go", dir: "vectorstores", imports: []string{"github.com/gin-gonic/gin"}}, true},
		{"the vector stores service imports the server", goFile{path: "vectorstores/x.go", dir: "vectorstores", imports: []string{"hearth/server"}}, true},
		{"the vector stores service imports the console", goFile{path: "vectorstores/x.go", dir: "vectorstores", imports: []string{"hearth/server/console"}}, true},
		{"the file_search kind imports the vector stores service", goFile{path: "filesearch/x.go", dir: "filesearch", imports: []string{"hearth/vectorstores"}}, true},
		{"the store imports the vector stores service", goFile{path: "storage/sqlite/x.go", dir: "storage/sqlite", imports: []string{"hearth/vectorstores"}}, true},

		{"the runtime imports Ollama", goFile{path: "engine/ollama/x.go", dir: "engine/ollama", imports: []string{"github.com/ollama/ollama/api", "hearth/engine"}}, false},
		{"the SQLite store imports go-sqlite3", goFile{path: "storage/sqlite/db.go", dir: "storage/sqlite", imports: []string{"github.com/mattn/go-sqlite3"}}, false},
		{"the PostgreSQL store imports pgx", goFile{path: "storage/postgres/db.go", dir: "storage/postgres", imports: []string{"github.com/jackc/pgx/v5/pgxpool"}}, false},
		{"a store uses the shared SQL layer", goFile{path: "storage/sqlite/db.go", dir: "storage/sqlite", imports: []string{"hearth/storage/sqlstore"}}, false},
		{"an engine test starts the runtime", goFile{path: "engine/x_test.go", dir: "engine", test: true, imports: []string{"hearth/engine/ollama/testenv"}}, false},
		{"the core runs the engine over the store", goFile{path: "respond/x.go", dir: "respond", imports: []string{"hearth/engine", "hearth/storage", "hearth/internal/gencache"}}, false},
		{"the server calls the core", goFile{path: "server/x.go", dir: "server", imports: []string{"hearth/respond"}}, false},
		{"the server imports the wiring", goFile{path: "server/x.go", dir: "server", imports: []string{"hearth/cmd/hearth/wire"}}, true},
		{"the core's test imports the wiring", goFile{path: "respond/x_test.go", dir: "respond", test: true, imports: []string{"hearth/cmd/hearth/wire"}}, true},
		{"the console's test imports the wiring", goFile{path: "server/console/x_test.go", dir: "server/console", test: true, imports: []string{"hearth/cmd/hearth/wire"}}, true},
		{"a server test starts hearth as the command wires it", goFile{path: "server/x_test.go", dir: "server", test: true, imports: []string{"hearth/cmd/hearth/wire"}}, false},
		{"the wiring builds the core, the vector stores and the server", goFile{path: "cmd/hearth/wire/x.go", dir: "cmd/hearth/wire",
			imports: []string{"hearth/respond", "hearth/vectorstores", "hearth/telemetry", "hearth/server", "hearth/server/console"}}, false},
		{"the command wires everything", goFile{path: "cmd/hearth/x.go", dir: "cmd/hearth", imports: []string{"hearth/server", "hearth/storage/sqlite", "hearth/engine/ollama"}}, false},
		{"the vector stores service uses the store, the runtimes' seam and the file_search kind", goFile{path: "vectorstores/x.go", dir: "vectorstores",
			imports: []string{"hearth/storage", "hearth/engine", "hearth/filesearch", "hearth/internal/gencache"}}, false},
		{"the server serves the vector stores service", goFile{path: "server/x.go", dir: "server", imports: []string{"hearth/vectorstores"}}, false},
	} {
		got := violations([]goFile{tc.file})
		if bad := len(got) > 0; bad != tc.bad {
			t.Errorf("%s: violations %q, want any: %v", tc.name, got, tc.bad)
		}
	}
}

// TestFloorsCoverTheModule: every floor entry names a directory of the module, so a
// moved package does not leave a rule that guards nothing.
func TestFloorsCoverTheModule(t *testing.T) {
	for _, f := range floors {
		if f.dir == "" {
			continue
		}
		if st, err := os.Stat(filepath.FromSlash(f.dir)); err != nil || !st.IsDir() {
			t.Errorf("floor entry %q is not a directory of the module", f.dir)
		}
	}
}
