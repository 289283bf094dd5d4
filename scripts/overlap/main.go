// Command overlap measures how many lines of hearth's tree also occur in another
// project's source: the Ollama module hearth builds on (every version of it in the Go
// module cache) and, for hearth's own chat templates, the published templates that the
// Jinja library carries as its test data. hearth writes its own code and templates
// (facts such as formats, field names and expected outputs carry over, text does not);
// this is the check, and its test runs it in `make test`.
//
//	go run ./scripts/overlap           # the report, the files with the most copied lines first
//	go run ./scripts/overlap -check    # exit 1 past the limits (overlap_test.go runs this)
//	go run ./scripts/overlap -v        # also every copied line and where it is from
//
// Lines are compared normalised: trimmed, inner runs of white space made one space, and
// only lines of at least minLine characters that say something (not punctuation alone,
// not an idiom every Go program writes alike: see trivial). Two such programs still
// share many single lines (`ctx := context.Background()`, `for _, tc := range
// []struct {`), so a line counts as copied only where copying shows: in a run of
// minRun consecutive compared lines that occurs in that order in one file of the
// other project, or as a line of at least longLine characters.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const (
	// minLine is the shortest line compared: shorter ones (`if err != nil {`, `}`,
	// `return nil`, a lone keyword) occur in any two Go programs.
	minLine = 20
	// minRun consecutive shared lines in the same order are a copied passage.
	minRun = 3
	// longLine: a shared line this long is copied text (a sentence of a comment, an
	// error message, a template line), not a coincidence.
	longLine = 60
)

// The limits of -check. Code: no line of the tree is
// copied from Ollama's source. Templates: hearth's templates are written in its own
// structure; the lines a published template shares with ours are the family's fixed
// texts (special tokens, tool-prompt sentences, which the model was trained on and the
// prompt must carry byte for byte), and they stay below a fifth of a template's lines.
const (
	codeLimit     = 0
	templateLimit = 0.20
)

// extensions are the files compared: code, scripts, templates and prose.
var extensions = map[string]bool{".go": true, ".jinja": true, ".sh": true, ".py": true, ".md": true}

// familyTexts are sentences of a model family's own prompt (its published chat
// template), which the model was trained on: hearth's templates and script models must
// write them byte for byte, and Ollama's templates write them too. They are facts of the
// format, not Ollama's text, and are not counted as copied when long.
var familyTexts = []string{
	"You may call one or more functions to assist with the user query.",
	"You are provided with function signatures within <tools></tools> XML tags:",
	"For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:",
}

// trivial are lines of at least minLine characters that independent Go programs write
// alike, compared after normalise: error checks, test scaffolding, a struct field with
// its JSON name (two programs speaking one API declare the same fields), an import path.
var trivial = []*regexp.Regexp{
	regexp.MustCompile(`^(if|} else if) err (!=|==) nil (\|\||&&) .*\{$`),
	regexp.MustCompile(`^if err := [\w.]+\([\w., ]*\); err != nil \{$`),
	regexp.MustCompile(`^return (nil, |"", |0, |false, )*(err|fmt\.Errorf\(.*\))$`),
	regexp.MustCompile(`^t\.(Fatal|Fatalf|Error|Errorf|Skip|Skipf|Log|Logf)\("[^"]*"(, [\w.()]+)*\)$`),
	regexp.MustCompile(`^(ctx, cancel := context\.With\w+\(.*\)|ctx := context\.\w+\(\)|defer cancel\(\))$`),
	regexp.MustCompile(`^(srv|ts|server) := httptest\.New\w*Server\(.*`),
	regexp.MustCompile(`^(return )?http\.HandlerFunc\(func\(w http\.ResponseWriter, r \*http\.Request\) \{$`),
	regexp.MustCompile("^\\*?\\w+ \\*?[\\w.\\[\\]*]+ `json:\"[\\w,]+\"`( // .*)?$"), // Name Type `json:"name"`
	regexp.MustCompile(`^(\w+ )?"[\w.-]+(/[\w.-]+)+"$`),                             // an import path
	regexp.MustCompile(`^if errors\.(Is|As)\(err, [\w.&]+\) (\|\||&&) .*\{$`),
	regexp.MustCompile(`^(req|r)\.Header\.Set\("[\w-]+", .*\)$`),
	regexp.MustCompile(`^(resp|res), err := (http\.DefaultClient|client|c)\.Do\(req\)$`),
	regexp.MustCompile(`^defer (resp|res)\.Body\.Close\(\)$`),
	regexp.MustCompile(`^if (resp|res)\.StatusCode != (http\.StatusOK|200) \{$`),
	regexp.MustCompile(`^(if len\(got\) != len\(want\) \{|if got\[i\] != want\[i\] \{)$`),
	regexp.MustCompile(`^set -euo pipefail$`),
	regexp.MustCompile(`^#!/usr/bin/env (bash|python3|sh)$`),
}

var space = regexp.MustCompile(`\s+`)

// normalise returns the line as compared, or "" for a line not compared.
func normalise(line string) string {
	s := space.ReplaceAllString(strings.TrimSpace(line), " ")
	if len(s) < minLine {
		return ""
	}
	word := 0
	for _, r := range s {
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f {
			word++
		}
	}
	if word < 8 { // punctuation, a rule of dashes, a run of brackets
		return ""
	}
	for _, re := range trivial {
		if re.MatchString(s) {
			return ""
		}
	}
	return s
}

func familyText(s string) bool {
	for _, t := range familyTexts {
		if s == t {
			return true
		}
	}
	return false
}

// sequence is the normalised lines of a file in order, repeats kept.
func sequence(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for sc.Scan() {
		if s := normalise(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// reference is another project's normalised lines and its runs of minRun consecutive
// ones, each with the first file that holds it.
type reference struct {
	lines, runs map[string]string
}

func newReference() *reference {
	return &reference{lines: map[string]string{}, runs: map[string]string{}}
}

func (r *reference) add(root, label string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !extensions[filepath.Ext(path)] {
			return nil
		}
		seq, err := sequence(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		src := label + "/" + filepath.ToSlash(rel)
		for i, l := range seq {
			if _, ok := r.lines[l]; !ok {
				r.lines[l] = src
			}
			if i+minRun <= len(seq) {
				run := strings.Join(seq[i:i+minRun], "\n")
				if _, ok := r.runs[run]; !ok {
					r.runs[run] = src
				}
			}
		}
		return nil
	})
}

// fileOverlap is one file and the lines it shares with the reference: shared counts
// its distinct compared lines found there at all, copied those that show copying.
type fileOverlap struct {
	path                  string
	shared, copied, lines int
	examples              []string // "line  (reference file)", for the copied ones
}

// overlapOf compares one file's lines with ref.
func overlapOf(path, file string, ref *reference) (fileOverlap, error) {
	seq, err := sequence(file)
	if err != nil {
		return fileOverlap{}, err
	}
	from := make([]string, len(seq)) // the reference file of each copied line
	for i := 0; i+minRun <= len(seq); i++ {
		if src, ok := ref.runs[strings.Join(seq[i:i+minRun], "\n")]; ok {
			for j := i; j < i+minRun; j++ {
				from[j] = src
			}
		}
	}
	for i, l := range seq {
		if src, ok := ref.lines[l]; ok && len(l) >= longLine && !familyText(l) {
			from[i] = src
		}
	}
	o := fileOverlap{path: path}
	seen := map[string]bool{}
	for i, l := range seq {
		if seen[l] {
			continue
		}
		seen[l] = true
		o.lines++
		if _, ok := ref.lines[l]; ok {
			o.shared++
		}
		if from[i] != "" {
			o.copied++
			o.examples = append(o.examples, fmt.Sprintf("%s  (%s)", l, from[i]))
		}
	}
	return o, nil
}

// compare returns the files of files (slash paths under root) that share lines with
// ref, most copied first.
func compare(root string, files []string, ref *reference) ([]fileOverlap, error) {
	var out []fileOverlap
	for _, f := range files {
		if !extensions[filepath.Ext(f)] {
			continue
		}
		o, err := overlapOf(f, filepath.Join(root, filepath.FromSlash(f)), ref)
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		} else if err != nil {
			return nil, err
		}
		if o.shared > 0 {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].copied != out[j].copied {
			return out[i].copied > out[j].copied
		}
		if out[i].shared != out[j].shared {
			return out[i].shared > out[j].shared
		}
		return out[i].path < out[j].path
	})
	return out, nil
}

// templateOverlap is one of hearth's templates and the published template it shares
// the most lines with.
type templateOverlap struct {
	name, closest string
	shared, lines int
	ratio         float64
	sharedLines   []string
}

// compareTemplates compares each of hearth's templates with each published one, line
// by line: a template is short and every line of it is a choice of its author.
func compareTemplates(ours, published []string) ([]templateOverlap, error) {
	pub := map[string]map[string]bool{}
	for _, p := range published {
		seq, err := sequence(p)
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for _, l := range seq {
			set[l] = true
		}
		pub[filepath.Base(p)] = set
	}
	names := make([]string, 0, len(pub))
	for n := range pub {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []templateOverlap
	for _, o := range ours {
		seq, err := sequence(o)
		if err != nil {
			return nil, err
		}
		distinct := map[string]bool{}
		var ls []string
		for _, l := range seq {
			if !distinct[l] {
				distinct[l] = true
				ls = append(ls, l)
			}
		}
		best := templateOverlap{name: filepath.Base(o), lines: len(ls)}
		for _, name := range names {
			var shared []string
			for _, l := range ls {
				if pub[name][l] {
					shared = append(shared, l)
				}
			}
			if len(shared) > best.shared || best.closest == "" {
				best.shared, best.closest, best.sharedLines = len(shared), name, shared
			}
		}
		if best.lines > 0 {
			best.ratio = float64(best.shared) / float64(best.lines)
		}
		out = append(out, best)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ratio > out[j].ratio })
	return out, nil
}

// result is a whole measurement.
type result struct {
	ollamaDirs          []string
	code                []fileOverlap
	copied, shared      int
	templates           []templateOverlap
	publishedDir        string
	treeFiles, refLines int
}

// measure runs both comparisons over the repository at root.
func measure(root string) (*result, error) {
	cache, err := goEnv(root, "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	r := &result{}
	r.ollamaDirs, _ = filepath.Glob(filepath.Join(cache, "github.com", "ollama", "ollama@*"))
	if len(r.ollamaDirs) == 0 {
		return nil, fmt.Errorf("no github.com/ollama/ollama in the module cache %s (go mod download)", cache)
	}
	ref := newReference()
	for _, d := range r.ollamaDirs {
		if err := ref.add(d, filepath.Base(d)); err != nil {
			return nil, err
		}
	}
	r.refLines = len(ref.lines)
	files, err := treeFiles(root)
	if err != nil {
		return nil, err
	}
	r.treeFiles = len(files)
	all, err := compare(root, files, ref)
	if err != nil {
		return nil, err
	}
	for _, o := range all {
		r.code = append(r.code, o)
		r.copied += o.copied
		r.shared += o.shared
	}

	jinjaDir, err := moduleDir(root, "github.com/ardanlabs/jinja")
	if err != nil {
		return nil, err
	}
	r.publishedDir = filepath.Join(jinjaDir, "testdata", "templates")
	published, _ := filepath.Glob(filepath.Join(r.publishedDir, "*.jinja"))
	if len(published) == 0 {
		return nil, fmt.Errorf("no published templates in %s", r.publishedDir)
	}
	// hearth's family templates: embedded beside the package, or (before they were
	// embedded) in its test data.
	var ours []string
	for _, dir := range []string{"templates", filepath.Join("testdata", "templates")} {
		found, _ := filepath.Glob(filepath.Join(root, "engine", "chattemplate", dir, "*.jinja"))
		ours = append(ours, found...)
	}
	if len(ours) == 0 {
		return nil, fmt.Errorf("no family templates under %s", filepath.Join(root, "engine", "chattemplate"))
	}
	r.templates, err = compareTemplates(ours, published)
	return r, err
}

// failures are the limits r passes.
func (r *result) failures() []string {
	var out []string
	if r.copied > codeLimit {
		files := 0
		for _, o := range r.code {
			if o.copied > 0 {
				files++
			}
		}
		out = append(out, fmt.Sprintf("%d lines of %d files are copied from Ollama's source (limit %d)", r.copied, files, codeLimit))
	}
	for _, t := range r.templates {
		if t.ratio > templateLimit {
			out = append(out, fmt.Sprintf("%s shares %.1f%% of its lines with the published %s (limit %.0f%%)", t.name, 100*t.ratio, t.closest, 100*templateLimit))
		}
	}
	return out
}

func (r *result) print(verbose bool) {
	fmt.Printf("hearth's tree (%d files; .go .jinja .sh .py .md compared) against the %d distinct lines of %s\n",
		r.treeFiles, r.refLines, strings.Join(baseNames(r.ollamaDirs), ", "))
	fmt.Printf("(normalised lines of at least %d characters that are not idioms; copied: in a run of %d found in one file, or a shared line of %d+ characters)\n\n",
		minLine, minRun, longLine)
	printFiles := func(list []fileOverlap) {
		for i, o := range list {
			if i == 25 && !verbose {
				fmt.Printf("  ... %d more files\n", len(list)-i)
				break
			}
			fmt.Printf("  copied %4d  shared %4d  of %5d  %s\n", o.copied, o.shared, o.lines, o.path)
			if verbose {
				for _, e := range o.examples {
					fmt.Printf("      %s\n", e)
				}
			}
		}
	}
	fmt.Printf("%d copied lines (limit %d); %d lines shared at all, in %d files\n", r.copied, codeLimit, r.shared, len(r.code))
	printFiles(r.code)
	fmt.Printf("\nhearth's templates against the published templates in %s\n(distinct lines shared with the published template sharing the most; limit %.0f%%):\n", r.publishedDir, 100*templateLimit)
	for _, t := range r.templates {
		fmt.Printf("  %5.1f%%  %3d of %3d  %-26s %s\n", 100*t.ratio, t.shared, t.lines, t.name, t.closest)
		if verbose {
			for _, l := range t.sharedLines {
				fmt.Printf("      %s\n", l)
			}
		}
	}
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// treeFiles lists the repository's files as git sees them (tracked, and untracked but
// not ignored): build outputs and fetched tools are not the tree.
func treeFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

func goEnv(root, name string) (string, error) {
	cmd := exec.Command("go", "env", name)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func moduleDir(root, module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("%s is not in the module cache (go mod download)", module)
	}
	return dir, nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func main() {
	check := flag.Bool("check", false, "exit 1 past the limits")
	verbose := flag.Bool("v", false, "print every copied line and where it is from")
	flag.Parse()
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r, err := measure(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r.print(*verbose)
	if f := r.failures(); len(f) > 0 {
		fmt.Println()
		for _, s := range f {
			fmt.Println("OVER:", s)
		}
		if *check {
			os.Exit(1)
		}
	}
}
