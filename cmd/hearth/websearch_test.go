package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/mcp"
	"hearth/websearch"
)

// TestWebSearchConfig: [hosted.web_search] names a configured MCP server and its
// search tool, with the argument and result mapping; mistakes name the setting, and
// a server that is not configured stops hearth before it serves.
func TestWebSearchConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.toml")
	os.WriteFile(path, []byte(`[mcp.search]
command = "search-server"

[hosted.web_search]
mcp = "search"
tool = "find"
query_argument = "q"
arguments = { limit = 5 }
results = "hits"
url = "link"
title = "name"
snippet = "summary"
`), 0o600)
	if _, err := loadConfig(rootCommand(), path); err != nil {
		t.Fatal(err)
	}
	want := &webSearchConfig{MCP: "search", Tool: "find", Config: websearch.Config{QueryArgument: "q", Arguments: map[string]any{"limit": int64(5)},
		Results: "hits", URL: "link", Title: "name", Snippet: "summary"}}
	if !reflect.DeepEqual(configWebSearch, want) {
		t.Errorf("config\n%+v\nwant\n%+v", configWebSearch, want)
	}

	for body, wantErr := range map[string]string{
		"[hosted.web_search]\nmcp = \"search\"\n":                     "want mcp",
		"[hosted.web_search]\nmcp = \"s\"\ntool = \"t\"\nurl_x = 1\n": "hosted.web_search.url_x: unknown key",
		"[hosted.file_search]\nmcp = \"s\"\n":                         "hosted.file_search: unknown hosted tool",
	} {
		os.WriteFile(path, []byte(body), 0o600)
		if _, err := loadConfig(rootCommand(), path); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: err %v, want %q", body, err, wantErr)
		}
	}

	// The server must be one of the configured MCP servers.
	mgr, err := mcp.New(mcp.Options{Servers: []mcp.Server{{Label: "search", Command: "search-server"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	eng := engine.New(nil, engine.DefaultFormats(), nil)
	if err := registerWebSearch(eng, mgr, &webSearchConfig{MCP: "other", Tool: "find"}, nil); err == nil || !strings.Contains(err.Error(), "hosted.web_search") {
		t.Errorf("unknown server: %v", err)
	}
	if err := registerWebSearch(eng, mgr, &webSearchConfig{MCP: "search", Tool: "find"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, typ := range websearch.WebSearchToolTypes {
		if _, ok := eng.HostedKindFor(typ); !ok {
			t.Errorf("no kind registered for %s", typ)
		}
	}
}
