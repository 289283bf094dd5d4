package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// conversationsFile is the conversations every template is rendered over, by Python's
// Jinja2 (scripts/template-goldens.py) and by this package alike.
type conversationsFile struct {
	Now           string `json:"now"`
	Conversations []struct {
		Name   string          `json:"name"`
		Inputs json.RawMessage `json:"inputs"`
	} `json:"conversations"`
}

// golden is what Jinja2 made of one conversation: a prompt, the message a template
// raised, or the failure of the template itself.
type golden struct {
	Prompt  *string `json:"prompt"`
	Error   *string `json:"error"`
	Failure *string `json:"failure"`
}

type parityRow struct {
	family        string
	conversations int
	exact         int
	// lenient are the conversations Jinja2 cannot render (the template fails on them:
	// a list concatenated to a string, a filter HF lacks) where this package renders.
	lenient        int
	firstMismatch  string
	templateBroken string
}

// checkParity renders each template of templatesDir over the conversations and compares
// with the goldens in goldensDir, byte for byte.
func checkParity(t *testing.T, templatesDir, goldensDir, conversationsPath string) []parityRow {
	t.Helper()
	raw, err := os.ReadFile(conversationsPath)
	if err != nil {
		t.Fatal(err)
	}
	var spec conversationsFile
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse("2006-01-02T15:04:05", spec.Now)
	if err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(templatesDir, "*.jinja"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no *.jinja templates in %s", templatesDir)
	}
	sort.Strings(names)
	var rows []parityRow
	for _, path := range names {
		family := strings.TrimSuffix(filepath.Base(path), ".jinja")
		row := parityRow{family: family}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		graw, err := os.ReadFile(filepath.Join(goldensDir, family+".json"))
		if err != nil {
			t.Fatalf("%s: no goldens (run scripts/template-goldens.py): %v", family, err)
		}
		var goldens map[string]golden
		if err := json.Unmarshal(graw, &goldens); err != nil {
			t.Fatal(err)
		}
		tmpl, cerr := Compile(string(src))
		if g, ok := goldens["__template__"]; ok {
			row.templateBroken = *g.Error
			if cerr == nil {
				t.Errorf("%s: Jinja2 cannot compile the template (%s), this package can", family, *g.Error)
			}
			rows = append(rows, row)
			continue
		}
		if cerr != nil {
			t.Errorf("%s: %v", family, cerr)
			row.templateBroken = cerr.Error()
			rows = append(rows, row)
			continue
		}
		for _, c := range spec.Conversations {
			row.conversations++
			var in Inputs
			if err := json.Unmarshal(c.Inputs, &in); err != nil {
				t.Fatalf("%s/%s: %v", family, c.Name, err)
			}
			in.Now = now
			want, ok := goldens[c.Name]
			if !ok {
				t.Errorf("%s/%s: no golden (run scripts/template-goldens.py)", family, c.Name)
				continue
			}
			got, err := tmpl.Render(in)
			if want.Failure != nil && err == nil {
				row.lenient++
				t.Logf("%s/%s: Jinja2 fails (%s), this package renders", family, c.Name, *want.Failure)
				continue
			}
			if problem := compare(want, got, err); problem != "" {
				t.Errorf("%s/%s: %s", family, c.Name, problem)
				if row.firstMismatch == "" {
					row.firstMismatch = c.Name
				}
				continue
			}
			row.exact++
		}
		rows = append(rows, row)
	}
	t.Logf("%-36s %13s %11s %26s", "template", "conversations", "byte-exact", "Jinja2 fails, Go renders")
	for _, r := range rows {
		note := ""
		if r.templateBroken != "" {
			note = "  (template does not compile: " + r.templateBroken + ")"
		}
		t.Logf("%-36s %13d %11d %26d%s", r.family, r.conversations, r.exact, r.lenient, note)
	}
	return rows
}

// compare says how Go's render differs from the golden, "" when it does not.
func compare(want golden, got string, err error) string {
	switch {
	case want.Prompt != nil:
		if err != nil {
			return fmt.Sprintf("Jinja2 renders, this package fails: %v", err)
		}
		if got != *want.Prompt {
			return firstDifference(*want.Prompt, got)
		}
	case want.Error != nil:
		var te *TemplateError
		if !errors.As(err, &te) {
			return fmt.Sprintf("Jinja2 raises %q, this package gives %v (prompt %q)", *want.Error, err, got)
		}
		if te.Message != *want.Error {
			return fmt.Sprintf("raised %q, Jinja2 raised %q", te.Message, *want.Error)
		}
	case want.Failure != nil:
		// Both fail; that Jinja2 fails where this package renders is counted apart.
	}
	return ""
}

func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(i-60, 0)
	return fmt.Sprintf("differs at byte %d of %d (got %d):\n want …%q\n got  …%q",
		i, len(want), len(got), want[from:min(i+60, len(want))], got[from:min(i+60, len(got))])
}

// TestTemplateParity renders the templates written for hearth's tests (one per family,
// in the shape of each family's published format) over the shared conversations and
// requires the prompts Python's Jinja2 rendered into the committed goldens, byte for
// byte. It needs no Python: scripts/template-goldens.py made the goldens.
func TestTemplateParity(t *testing.T) {
	checkParity(t, filepath.Join("templates"), filepath.Join("testdata", "goldens"),
		filepath.Join("testdata", "conversations.json"))
}

// TestPublishedTemplateParity renders the published templates of a directory (the
// model makers' own, *.jinja, fetched or extracted for the run and never committed)
// with both engines, Python's Jinja2 through scripts/template-goldens.py and this
// package, and requires byte equality.
func TestPublishedTemplateParity(t *testing.T) {
	dir := os.Getenv("HEARTH_TEMPLATE_DIR")
	if dir == "" {
		t.Skip("HEARTH_TEMPLATE_DIR is unset: set it to a directory of published *.jinja chat templates to compare this package with Python's Jinja2 over them")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("HEARTH_TEMPLATE_DIR is set but python3 is not on PATH (it renders the reference with jinja2)")
	}
	out := t.TempDir()
	conversations, err := filepath.Abs(filepath.Join("testdata", "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", filepath.Join("..", "..", "scripts", "template-goldens.py"),
		"--templates", dir, "--conversations", conversations, "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("template-goldens.py: %v\n%s", err, b)
	}
	checkParity(t, dir, out, conversations)
}

// TestFeatureParity is TestTemplateParity for templates that stress one area each
// (whitespace control, values as Python prints them) rather than a family.
func TestFeatureParity(t *testing.T) {
	checkParity(t, filepath.Join("testdata", "features"), filepath.Join("testdata", "goldens-features"),
		filepath.Join("testdata", "conversations.json"))
}

// TestEveryFamilyHasATemplate: each family of models.json names a built-in template
// that exists and compiles (emulated-hermes is hearth's own way of teaching tools to a
// model whose template has none, so it has no template of its own).
func TestEveryFamilyHasATemplate(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Formats []struct {
			ID       string `json:"id"`
			Template string `json:"template"`
		} `json:"formats"`
	}
	if err := json.Unmarshal(raw, &models); err != nil {
		t.Fatal(err)
	}
	for _, f := range models.Formats {
		if f.ID == "emulated-hermes" {
			continue
		}
		if f.Template == "" {
			t.Errorf("family %s names no template in models.json", f.ID)
			continue
		}
		src, ok := Builtin(f.Template)
		if !ok {
			t.Errorf("family %s: template %q is not among the built-in templates %v", f.ID, f.Template, BuiltinNames())
			continue
		}
		if _, err := Compile(src); err != nil {
			t.Errorf("family %s: %v", f.ID, err)
		}
	}
}
