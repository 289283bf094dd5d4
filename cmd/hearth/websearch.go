package main

import (
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
		for k2, v2 := range ws {
			p := "hosted.web_search." + k2
			var err error
			switch strings.ReplaceAll(strings.ToLower(k2), "-", "_") {
			case "mcp":
				out.MCP, err = asString(p, v2)
			case "tool":
				out.Tool, err = asString(p, v2)
			case "query_argument":
				out.QueryArgument, err = asString(p, v2)
			case "results":
				out.Results, err = asString(p, v2)
			case "url":
				out.URL, err = asString(p, v2)
			case "title":
				out.Title, err = asString(p, v2)
			case "snippet":
				out.Snippet, err = asString(p, v2)
			case "arguments":
				a, ok := v2.(map[string]any)
				if !ok {
					err = fmt.Errorf("%s: want a table of arguments", p)
				}
				out.Arguments = a
			default:
				err = fmt.Errorf("%s: unknown key (want %s)", p, strings.Join(webSearchKeys, ", "))
			}
			if err != nil {
				return nil, err
			}
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
	if log == nil {
		log = slog.Default()
	}
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
