// Package mcptest serves MCP servers for tests, written with the official MCP Go SDK:
// a search server over a small local corpus, run over stdio by the test binary itself
// (ServeIfAsked in its TestMain).
package mcptest

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"hearth/mcp"
)

// Doc is one page of the corpus.
type Doc struct {
	URL, Title, Text string
}

// Corpus is the search server's pages.
var Corpus = []Doc{
	{URL: "https://hearth.example/docs/overview", Title: "hearth overview",
		Text: "hearth is a local server for the Responses API: it runs open-weight models on your own machine."},
	{URL: "https://hearth.example/docs/mcp", Title: "MCP servers in hearth",
		Text: "hearth runs the tools of configured MCP servers as hosted tools, inside one response."},
	{URL: "https://bread.example/sourdough", Title: "Sourdough at home",
		Text: "A sourdough starter needs flour, water and a week of patience."},
}

// searchEnv makes the test binary the search server.
const searchEnv = "HEARTH_MCP_SEARCH_SERVER"

// ServeIfAsked serves the search server on stdin and stdout, and exits, when the
// process was started as one (SearchServer); otherwise it returns at once. A test
// binary's TestMain calls it first.
func ServeIfAsked() {
	if os.Getenv(searchEnv) != "1" {
		return
	}
	if err := SearchServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// StdioServer is the test binary as a configured stdio MCP server labelled label,
// serving SearchServer.
func StdioServer(label string) (mcp.Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return mcp.Server{}, err
	}
	return mcp.Server{Label: label, Command: exe, Env: map[string]string{searchEnv: "1"}}, nil
}

// SearchArgs are the search tool's arguments.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"what to search for"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most results to return"`
}

// Result is one search result.
type Result struct {
	URL     string `json:"url"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
}

// Results are the search tool's output.
type Results struct {
	Results []Result `json:"results"`
}

// Search finds the pages of the corpus that have a word of the query, those with
// more of its words first (then in corpus order), at most limit (3 when 0).
func Search(query string, limit int) []Result {
	if limit <= 0 {
		limit = 3
	}
	words := strings.Fields(strings.ToLower(query))
	type scored struct {
		doc   int
		score int
	}
	var hits []scored
	for i, d := range Corpus {
		text := strings.ToLower(d.Title + " " + d.Text)
		n := 0
		for _, w := range words {
			if strings.Contains(text, w) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, scored{i, n})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := []Result{}
	for _, h := range hits[:min(limit, len(hits))] {
		d := Corpus[h.doc]
		out = append(out, Result{URL: d.URL, Title: d.Title, Snippet: d.Text})
	}
	return out
}

// SearchServer has the tools "search" (the corpus's results, as JSON text and as
// structured content) and "broken_search" (which always reports an error).
func SearchServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "hearth-test-search", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "search", Description: "Searches a small corpus of pages."},
		func(_ context.Context, _ *sdk.CallToolRequest, a SearchArgs) (*sdk.CallToolResult, Results, error) {
			res := Results{Results: Search(a.Query, a.Limit)}
			text, _ := json.Marshal(res)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}}, res, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "broken_search", Description: "A search index that is down."},
		func(context.Context, *sdk.CallToolRequest, SearchArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the search index is offline"}}}, nil, nil
		})
	return s
}
