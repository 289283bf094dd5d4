package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoCopiedLines is the check `make test` runs: no line of the tree is copied from the Ollama module's source, and none of
// hearth's templates shares more than templateLimit of its lines with a published one.
func TestNoCopiedLines(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := measure(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.code {
		for _, e := range o.examples {
			t.Errorf("%s: copied: %s", o.path, e)
		}
	}
	for _, f := range r.failures() {
		t.Error(f)
	}
	t.Logf("%d files, %d copied lines (limit %d), %d lines shared at all",
		r.treeFiles, r.copied, codeLimit, r.shared)
}

// TestOverlapFindsCopies: a passage of Ollama's source pasted into a file is found, with
// the file it came from; the idioms any Go program writes are not.
func TestOverlapFindsCopies(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := moduleDir(root, "github.com/ollama/ollama")
	if err != nil {
		t.Fatal(err)
	}
	ref := newReference()
	if err := ref.add(filepath.Join(dir, "template"), "ollama"); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "template", "template.go"))
	if err != nil {
		t.Fatal(err)
	}
	// Ten consecutive compared lines from the middle of the file, pasted among our own.
	var passage []string
	for _, l := range strings.Split(string(src), "\n")[len(strings.Split(string(src), "\n"))/2:] {
		if normalise(l) != "" {
			passage = append(passage, l)
		}
		if len(passage) == 10 {
			break
		}
	}
	own := "package x\n\n// A line of hearth's own that no one else wrote this way.\n"
	idioms := "ctx := context.Background()\nif err != nil {\n\treturn nil, err\n}\ndefer resp.Body.Close()\n" +
		"for _, tc := range []struct {\n\tName string `json:\"name\"`\n\tType string `json:\"type\"`\n"

	f := filepath.Join(t.TempDir(), "pasted.go")
	if err := os.WriteFile(f, []byte(own+strings.Join(passage, "\n")+"\n"+idioms), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := overlapOf("pasted.go", f, ref)
	if err != nil {
		t.Fatal(err)
	}
	if o.copied < len(passage)-1 || len(o.examples) == 0 || !strings.Contains(o.examples[0], "ollama/template.go") {
		t.Errorf("a pasted passage of %d lines: %d copied, examples %q", len(passage), o.copied, o.examples)
	}

	if err := os.WriteFile(f, []byte(own+idioms), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err = overlapOf("pasted.go", f, ref); err != nil {
		t.Fatal(err)
	} else if o.copied != 0 {
		t.Errorf("idioms alone: %d copied lines %q", o.copied, o.examples)
	}
}
