package websearch

import (
	"strings"

	"hearth"
	"hearth/engine"
)

// ToolRefused refuses the web search tool to a key the operator did not allow to use
// the search tool's server.
func (k *Kind) ToolRefused(key string, t *hearth.Tool) (field, subject string, refused bool) {
	if t.Type != k.toolType || k.backend == nil || k.backend.KeyAllowed(key) {
		return "", "", false
	}
	return "type", "Web search", true
}

// ItemRefused passes every item: a web_search_call names no server, and carries only
// a query and URLs, what a function call and its output can carry too. A key that may
// not search gets no search from one (its tools are refused).
func (k *Kind) ItemRefused(string, *hearth.Item) (string, string, bool) { return "", "", false }

// Reemit reports a stored web_search_call as the live stream did.
func (k *Kind) Reemit(b *hearth.Builder, it hearth.Item) { ReemitCall(b, it) }

// View is how the console shows a web_search_call: the query, and the URLs found.
func (k *Kind) View(it hearth.Item) engine.HostedView {
	v := engine.HostedView{Name: "web_search", Text: it.Status}
	if a := ActionOf(it); a != nil {
		v.Args = a.Query
		if len(a.Sources) > 0 {
			urls := make([]string, len(a.Sources))
			for i, s := range a.Sources {
				urls[i] = s.URL
			}
			v.Text = strings.Join(urls, "\n")
		}
	}
	return v
}
