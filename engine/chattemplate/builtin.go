package chattemplate

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// builtin holds the chat templates written for hearth, one per family of models.json
// (its formats' "template" field names the file): a model whose file carries no template
// of its own is rendered from its family's. They are hearth's own text, in the shape of
// each family's published format; the parity goldens hold them to Python's Jinja2.
//
//go:embed templates/*.jinja
var builtin embed.FS

// Builtin returns the text of the built-in template file name (e.g. "qwen3.jinja").
func Builtin(name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") {
		return "", false
	}
	b, err := builtin.ReadFile(path.Join("templates", name))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// BuiltinNames lists the built-in template files, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtin, "templates")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
