package engine

import (
	"fmt"
	"slices"
	"strings"

	"hearth"
)

// Alias serves the model Model under the name Pattern: an exact name
// ("claude-sonnet-4-5") or a glob whose '*' stands for any run of characters
// ("claude-*"). Agents send their own model names (Claude Code a main and a small
// fast model, Continue or Aider whatever their user typed); an alias lets them reach
// a local model without renaming anything on either side.
type Alias struct {
	Pattern, Model string
}

// ParseAlias reads the setting's text PATTERN=MODEL.
func ParseAlias(s string) (Alias, error) {
	pattern, model, ok := strings.Cut(s, "=")
	pattern, model = strings.TrimSpace(pattern), strings.TrimSpace(model)
	if !ok || pattern == "" || model == "" {
		return Alias{}, fmt.Errorf("model alias %q: want PATTERN=MODEL, e.g. 'claude-*=qwen3:8b'", s)
	}
	if strings.Contains(model, "*") {
		return Alias{}, fmt.Errorf("model alias %q: the model %q is a pattern; an alias names one model", s, model)
	}
	if !ParseModelName(model).Valid() {
		return Alias{}, fmt.Errorf("model alias %q: %q is not a model name", s, model)
	}
	return Alias{Pattern: pattern, Model: model}, nil
}

// Aliases resolve requested model names. An exact name wins over every glob; among
// globs the first given wins. Names compare case-insensitively, as the runtime's do.
// The zero value and nil resolve nothing.
type Aliases struct {
	exact map[string]Alias
	globs []Alias
}

// NewAliases checks and orders list. A target that another alias would send
// elsewhere is refused: resolution is one step, and a chain (a=b, b=c) would serve a
// different model than the operator read off the list.
func NewAliases(list []Alias) (*Aliases, error) {
	a := &Aliases{exact: map[string]Alias{}}
	for _, al := range list {
		key := strings.ToLower(al.Pattern)
		if !strings.Contains(al.Pattern, "*") {
			if prev, ok := a.exact[key]; ok && prev.Model != al.Model {
				return nil, fmt.Errorf("model alias %q is given twice (to %q and %q)", al.Pattern, prev.Model, al.Model)
			}
			a.exact[key] = al
			continue
		}
		a.globs = append(a.globs, al)
	}
	for _, al := range list {
		if to, ok := a.Resolve(al.Model); ok && !strings.EqualFold(to, al.Model) {
			return nil, fmt.Errorf("model alias %s=%s: %q is itself served as %q by another alias; name the model it should reach",
				al.Pattern, al.Model, al.Model, to)
		}
	}
	return a, nil
}

// Resolve returns the model that serves name, and whether an alias matched.
func (a *Aliases) Resolve(name string) (string, bool) {
	if a == nil || name == "" {
		return name, false
	}
	lower := strings.ToLower(name)
	if al, ok := a.exact[lower]; ok {
		return al.Model, true
	}
	for _, al := range a.globs {
		if globMatch(strings.ToLower(al.Pattern), lower) {
			return al.Model, true
		}
	}
	return name, false
}

// Exact are the aliases that name one model name (no glob), for model lists: a client
// that picks from GET /v1/models then finds the names it may send. A glob names no
// model a list could show.
func (a *Aliases) Exact() []Alias {
	if a == nil {
		return nil
	}
	out := make([]Alias, 0, len(a.exact))
	for _, al := range a.exact {
		out = append(out, al)
	}
	slices.SortFunc(out, func(x, y Alias) int { return strings.Compare(x.Pattern, y.Pattern) })
	return out
}

// Listed is list with an entry for each exact alias whose model is in it, named as the
// alias and otherwise the model's (Model keeps the model's own name, so that what the
// runtimes hold is shown for the alias too). Clients that pick from a list (Claude
// Code's /model, Continue, Zed) then offer the names the operator chose.
func (a *Aliases) Listed(list []ListedModel) []ListedModel {
	if a == nil || len(a.exact) == 0 {
		return list
	}
	out := list
	for _, al := range a.Exact() {
		for _, m := range list {
			if strings.EqualFold(m.Name, al.Model) || strings.EqualFold(m.Model, al.Model) ||
				strings.EqualFold(strings.TrimSuffix(m.Name, ":"+DefaultModelTag), al.Model) {
				e := m
				e.Name, e.Model = al.Pattern, m.Name
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// targetOf is an alias that sends names to model, if one does.
func (a *Aliases) targetOf(model string) (Alias, bool) {
	if a == nil {
		return Alias{}, false
	}
	for _, al := range a.exact {
		if strings.EqualFold(al.Model, model) {
			return al, true
		}
	}
	for _, al := range a.globs {
		if strings.EqualFold(al.Model, model) {
			return al, true
		}
	}
	return Alias{}, false
}

// globMatch reports whether name matches pattern, where '*' matches any run of
// characters, '/' and ':' included (model names hold both).
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}

// ModelNotFound is the 404 for a model name the runtime does not have, saying how to
// serve it: agents send names of their own (claude-sonnet-4-5), and an operator who
// meets this error wants the setting that maps them, not only the refusal. A name an
// alias sends here is a missing target: the alias is what to fix.
func (a *Aliases) ModelNotFound(name string) *hearth.Error {
	e := hearth.ModelNotFound(name)
	if al, ok := a.targetOf(name); ok {
		e.Message = fmt.Sprintf("The model '%s' does not exist or is not available, and the model alias '%s=%s' serves requests with it: "+
			"pull it (hearth pull %s) or point the alias at a model hearth has (hearth models).", name, al.Pattern, al.Model, al.Model)
		return e
	}
	pattern := name
	if i := strings.IndexAny(name, "-:/"); i > 0 {
		pattern = name[:i+1] + "*"
	}
	e.Message = fmt.Sprintf("The model '%s' does not exist or is not available. To serve it under that name, "+
		"alias it to a model hearth has: hearth serve --model-alias '%s=MODEL' (or a pattern, '%s=MODEL'); see docs/clients.md.",
		name, name, pattern)
	return e
}
