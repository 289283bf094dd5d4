package main

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"hearth/engine/ollama/testenv"
)

// The documentation is checked against the commands it describes: every flag it names
// exists (on the command a line runs, or on some command where a flag is named alone),
// every relative link resolves, and every sample output block marked with
//
//	<!-- output of: hearth ARGS -->
//
// (or <!-- output of: hearth ARGS (exit status N) --> for a command that fails) right
// before a fenced block is what that command prints (see TestDocsSamples).

// docFile is one Markdown file of the documentation, relative to the repository root.
type docFile struct {
	path  string // relative to the repository root, slash-separated
	lines []string
}

// repoRoot is the repository root from this package's directory, where go test runs.
const repoRoot = "../.."

func docFiles(t *testing.T) []docFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append([]string{filepath.Join(repoRoot, "README.md")}, paths...)
	var out []docFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		out = append(out, docFile{path: filepath.ToSlash(rel), lines: strings.Split(string(b), "\n")})
	}
	return out
}

// docText is a doc's text split into code (fenced blocks' lines, with a line ending in
// a backslash joined to the next, and inline code spans) and prose (the rest, code spans
// removed), each with its line number.
type docText struct {
	line int
	code bool
	// inline is true for an inline code span.
	inline bool
	text   string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

func (f docFile) texts() []docText {
	var out []docText
	fence := ""
	cont := ""
	for i, l := range f.lines {
		trimmed := strings.TrimSpace(l)
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
				continue
			}
			if strings.HasSuffix(l, "\\") {
				cont += strings.TrimSuffix(l, "\\") + " "
				continue
			}
			out = append(out, docText{line: i + 1, code: true, text: cont + l})
			cont = ""
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(l, -1) {
			out = append(out, docText{line: i + 1, code: true, inline: true, text: m[1]})
		}
		out = append(out, docText{line: i + 1, text: codeSpan.ReplaceAllString(l, "")})
	}
	return out
}

// foreignFlags are other programs' flags the docs name alone (in prose, as `--flag`),
// with the program: the docs say which program they belong to.
var foreignFlags = map[string]string{
	"build-arg":                    "docker build",
	"device":                       "docker run",
	"dangerously-skip-permissions": "claude",
	"tools":                        "claude",
	"model":                        "claude",
	"system-prompt":                "claude",
	"no-show-model-warnings":       "aider",
}

// hearthArgs finds a hearth command in one shell command line (the words after
// `hearth`, `./bin/hearth` or an image's .../hearth, up to a pipe, ;, && or a comment),
// nil when it runs none.
func hearthArgs(line string, root *cobra.Command) [][]string {
	var out [][]string
	for _, seg := range regexp.MustCompile(`\|\||&&|[|;]|\$\(|\)`).Split(line, -1) {
		if i := strings.Index(seg, " #"); i >= 0 {
			seg = seg[:i]
		}
		words := strings.Fields(seg)
		for i, w := range words {
			if w != "hearth" && !strings.HasSuffix(w, "/hearth") {
				continue
			}
			rest := words[i+1:]
			// The root's own flags may come before the command.
			j := 0
			for j+1 < len(rest) && rest[j] == "--config" {
				j += 2
			}
			if j < len(rest) && isSubcommand(root, rest[j]) {
				out = append(out, rest)
			}
			break
		}
	}
	return out
}

func isSubcommand(root *cobra.Command, name string) bool {
	for _, c := range root.Commands() {
		if c.Name() == name || slices.Contains(c.Aliases, name) {
			return true
		}
	}
	return false
}

var longFlag = regexp.MustCompile(`^--([a-z][a-z0-9-]*)`)

// TestDocsFlags: every --flag the docs name exists. In a line that runs hearth (a code
// block's line, an inline code span) it is a flag of the command that line runs; named
// alone (`--flag`) it is a flag of some hearth command, or one of foreignFlags.
func TestDocsFlags(t *testing.T) {
	root := rootCommand()
	all := allFlagNames(root)
	all["help"] = true
	checked := 0
	for _, f := range docFiles(t) {
		for _, txt := range f.texts() {
			if !txt.code {
				continue
			}
			for _, args := range hearthArgs(txt.text, root) {
				cmd, _, err := root.Find(args)
				if err != nil {
					t.Errorf("%s:%d: %q: %v", f.path, txt.line, strings.Join(args, " "), err)
					continue
				}
				for _, a := range args {
					m := longFlag.FindStringSubmatch(a)
					if m == nil {
						continue
					}
					checked++
					if cmd.Flags().Lookup(m[1]) == nil && cmd.InheritedFlags().Lookup(m[1]) == nil && m[1] != "help" {
						t.Errorf("%s:%d: %s has no flag --%s (in %q)", f.path, txt.line, cmd.CommandPath(), m[1], txt.text)
					}
				}
			}
			if txt.inline {
				if m := longFlag.FindStringSubmatch(txt.text); m != nil {
					checked++
					if !all[m[1]] && foreignFlags[m[1]] == "" {
						t.Errorf("%s:%d: no hearth command has the flag --%s (`%s`)", f.path, txt.line, m[1], txt.text)
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d flags found in the docs: the scan missed them", checked)
	}
}

// anchor is the fragment GitHub gives a heading: lower case, punctuation but - and _
// removed, spaces as dashes.
func anchor(heading string) string {
	heading = codeSpan.ReplaceAllString(heading, "$1")
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127 && !strings.ContainsRune("—–…·→←’‘“”", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the fragments of a Markdown file's headings, with GitHub's -1, -2 for a
// repeated one, and explicit <a id> / name anchors.
func anchors(lines []string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if m := regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`).FindStringSubmatch(l); m != nil {
			a := anchor(m[1])
			if n := seen[a]; n > 0 {
				out[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
		for _, m := range regexp.MustCompile(`<a (?:id|name)="([^"]+)"`).FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
	}
	return out
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocsLinks: every relative link of the docs names a file or directory of the
// repository, and its #fragment a heading of the Markdown file it names.
func TestDocsLinks(t *testing.T) {
	files := docFiles(t)
	checked := 0
	for _, f := range files {
		for _, txt := range f.texts() {
			if txt.code {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(txt.text, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
					continue // http:, https:, mailto:
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				file := filepath.Join(repoRoot, filepath.Dir(f.path), filepath.FromSlash(path))
				if path == "" {
					file = filepath.Join(repoRoot, filepath.FromSlash(f.path))
				}
				st, err := os.Stat(file)
				if err != nil {
					t.Errorf("%s:%d: link %s: %v", f.path, txt.line, target, err)
					continue
				}
				if frag == "" || st.IsDir() || !strings.HasSuffix(file, ".md") {
					continue
				}
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(strings.Split(string(b), "\n"))[frag] {
					t.Errorf("%s:%d: link %s: no heading #%s in %s", f.path, txt.line, target, frag, path)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found in the docs: the scan missed them", checked)
	}
}

var outputMarker = regexp.MustCompile(`^<!-- output of: (hearth .+?)(?: \(exit status (\d+)\))? -->$`)

// sampleStandIns are the values a sample's command names that the test replaces with
// its own (a temporary directory, a free address), and names again in the output.
var sampleStandIns = regexp.MustCompile(`/tmp/hearth-[a-z-]+|(?:127\.0\.0\.1|0\.0\.0\.0):8080`)

// TestDocsSamples runs the command of each sample output block and compares what it
// prints (stdout) with the block. The command runs as its own process with the
// embedded runtime; /tmp/hearth-NAME paths and 127.0.0.1:8080 in it stand for a
// temporary directory and a free address of the test's own, named as in the doc in the
// output. In the block, … stands for any text within a line (what differs between
// machines: the CPU, free space, a version).
func TestDocsSamples(t *testing.T) {
	testenv.SkipIfExternal(t, "runs the docs' commands with the embedded runtime")
	env := slicesWithout(slicesWithout(os.Environ(), "OLLAMA_HOST="), "HEARTH_")
	env = append(env, runMainEnv+"=1")
	if runners := os.Getenv("HEARTH_RUNNER_DIR"); runners != "" {
		env = append(env, "HEARTH_RUNNER_DIR="+runners)
	}
	samples := 0
	for _, f := range docFiles(t) {
		for i := 0; i < len(f.lines); i++ {
			m := outputMarker.FindStringSubmatch(strings.TrimSpace(f.lines[i]))
			if m == nil {
				continue
			}
			samples++
			j := i + 1
			if j >= len(f.lines) || !strings.HasPrefix(strings.TrimSpace(f.lines[j]), "```") {
				t.Errorf("%s:%d: no fenced block right after the output marker", f.path, i+1)
				continue
			}
			var block []string
			for j++; j < len(f.lines) && !strings.HasPrefix(strings.TrimSpace(f.lines[j]), "```"); j++ {
				block = append(block, f.lines[j])
			}
			t.Run(fmt.Sprintf("%s:%d", f.path, i+1), func(t *testing.T) {
				dir := t.TempDir()
				standIns := map[string]string{}
				command := sampleStandIns.ReplaceAllStringFunc(m[1], func(s string) string {
					if _, ok := standIns[s]; !ok {
						host, _, _ := strings.Cut(s, ":")
						switch {
						case strings.HasPrefix(s, "/tmp/"):
							standIns[s] = filepath.Join(dir, filepath.Base(s))
						default:
							_, port, _ := strings.Cut(freeAddr(t), ":")
							standIns[s] = host + ":" + port
						}
					}
					return standIns[s]
				})
				args := strings.Fields(command)[1:]
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = env
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				status := 0
				if ee, ok := err.(*exec.ExitError); ok {
					status = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if want := cmp.Or(m[2], "0"); fmt.Sprint(status) != want {
					t.Fatalf("%s: exit status %d, the sample says %s\n%s%s", m[1], status, want, stdout.String(), stderr.String())
				}
				got := stdout.String()
				for doc, ours := range standIns {
					got = strings.ReplaceAll(got, ours, doc)
				}
				gotLines := strings.Split(strings.TrimRight(got, "\n"), "\n")
				if len(gotLines) != len(block) {
					t.Fatalf("%s prints %d lines, the sample shows %d:\n%s", m[1], len(gotLines), len(block), got)
				}
				for k, want := range block {
					parts := strings.Split(want, "…")
					for p := range parts {
						parts[p] = regexp.QuoteMeta(parts[p])
					}
					if !regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`).MatchString(gotLines[k]) {
						t.Errorf("line %d: %s prints\n\t%s\nthe sample shows\n\t%s", k+1, m[1], gotLines[k], want)
					}
				}
			})
		}
	}
	if samples < 3 {
		t.Errorf("%d sample output blocks found, want at least 3", samples)
	}
}

// sameDefault compares a default as a doc writes it with a flag's: equal text, or equal
// durations (60m and 1h0m0s) or numbers.
func sameDefault(doc, flag string) bool {
	if doc == flag || (doc == "none" && (flag == "" || flag == "[]")) {
		return true
	}
	if a, err := time.ParseDuration(doc); err == nil {
		b, err := time.ParseDuration(flag)
		return err == nil && a == b
	}
	if a, err := strconv.ParseInt(doc, 10, 64); err == nil {
		b, err := strconv.ParseInt(flag, 10, 64)
		return err == nil && a == b
	}
	return false
}

// TestDocsDefaults: in the docs' tables of flags (a row starting with `--flag`, under a
// header with a "default" column), each default written as code is the flag's default.
func TestDocsDefaults(t *testing.T) {
	root := rootCommand()
	serve, _, _ := root.Find([]string{"serve"})
	checked := 0
	for _, f := range docFiles(t) {
		col := -1
		for i, l := range f.lines {
			if !strings.HasPrefix(l, "|") {
				col = -1
				continue
			}
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			if col < 0 {
				for c, h := range cells {
					if strings.TrimSpace(h) == "default" {
						col = c
					}
				}
				continue
			}
			if col >= len(cells) || !strings.HasPrefix(cells[0], "`--") {
				continue
			}
			flags := codeSpan.FindAllStringSubmatch(cells[0], -1)
			defaults := codeSpan.FindAllStringSubmatch(cells[col], -1)
			if strings.TrimSpace(cells[col]) == "none" {
				defaults = [][]string{{"", "none"}}
			}
			for k, fl := range flags {
				if k >= len(defaults) {
					break
				}
				name := strings.TrimPrefix(fl[1], "--")
				pf := serve.Flags().Lookup(name)
				if pf == nil {
					continue // TestDocsFlags reports a flag no command has
				}
				doc := defaults[k][1]
				// A default resolved elsewhere (`hearth.db` in `--data`, `embedded`)
				// or one named after another flag is a description, not a value.
				if _, err := strconv.ParseInt(doc, 10, 64); err != nil &&
					(strings.ContainsAny(doc, "/~.") || strings.HasPrefix(doc, "-") || (doc != "none" && (pf.DefValue == "" || pf.DefValue == "[]"))) {
					continue
				}
				checked++
				if !sameDefault(doc, pf.DefValue) {
					t.Errorf("%s:%d: --%s's default is %q, the doc says %q", f.path, i+1, name, pf.DefValue, defaults[k][1])
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d defaults found in the docs' tables: the scan missed them", checked)
	}
}
