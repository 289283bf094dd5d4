package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"

	"hearth/engine"
	"hearth/mcp"
	"hearth/websearch"
)

// webSearchConfig is the config file's [hosted.web_search] table: which configured
// MCP server's tool searches, and how its arguments and output map. Only the operator
// names it; a request's web_search tool has no say in where hearth searches.
type webSearchConfig struct {
	MCP  string
	Tool string
	websearch.Config
}

// configWebSearch is the config file's [hosted.web_search], nil when there is none.
// loadConfig fills it.
var configWebSearch *webSearchConfig

var webSearchKeys = []string{"mcp", "tool", "query_argument", "arguments", "results", "url", "title", "snippet"}

// configHostedValue reads the config file's hosted table ([hosted.web_search]).
func configHostedValue(v any) (*webSearchConfig, error) {
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("hosted: want a table ([hosted.web_search])")
	}
	var out *webSearchConfig
	for k, v := range t {
		if strings.ReplaceAll(strings.ToLower(k), "-", "_") != "web_search" {
			return nil, fmt.Errorf("hosted.%s: unknown hosted tool (hearth configures web_search)", k)
		}
		ws, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("hosted.%s: want a table (%s)", k, strings.Join(webSearchKeys, ", "))
		}
		out = &webSearchConfig{}
		err := readTable("hosted.web_search", ws, "want "+strings.Join(webSearchKeys, ", "), map[string]any{
			"mcp": &out.MCP, "tool": &out.Tool, "query_argument": &out.QueryArgument, "results": &out.Results,
			"url": &out.URL, "title": &out.Title, "snippet": &out.Snippet,
			"arguments": func(v any) (err error) {
				var ok bool
				if out.Arguments, ok = v.(map[string]any); !ok {
					err = fmt.Errorf("want a table of arguments")
				}
				return err
			},
		})
		if err != nil {
			return nil, err
		}
		if out.MCP == "" || out.Tool == "" {
			return nil, fmt.Errorf("hosted.web_search: want mcp (the label of an [mcp.LABEL] server) and tool (its search tool)")
		}
	}
	return out, nil
}

// registerWebSearch registers the kinds of web_search, web_search_preview and their
// dated types over the configured MCP server's search tool. With none configured, a request's web_search
// tool stays what the decoder says: ignored, and reported so.
func registerWebSearch(eng *engine.Engine, servers *mcp.Manager, cfg *webSearchConfig, log *slog.Logger) error {
	if cfg == nil {
		return nil
	}
	log = cmp.Or(log, slog.Default())
	tool, err := servers.Bind(cfg.MCP, cfg.Tool)
	if err != nil {
		return fmt.Errorf("hosted.web_search: %w", err)
	}
	for _, typ := range websearch.WebSearchToolTypes {
		eng.RegisterHosted(websearch.NewKind(typ, tool, cfg.Config, log))
	}
	log.Info("web search", "mcp", cfg.MCP, "tool", cfg.Tool)
	return nil
}
