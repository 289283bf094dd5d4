package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"hearth/mcp"
)

// configMCP are the MCP servers of the --config file: its [mcp.LABEL] tables, and the
// strings of an mcp list (as --mcp takes them). loadConfig fills it; --mcp adds to it.
var configMCP []mcp.Server

// parseMCPFlag reads one --mcp value: LABEL=https://... (streamable HTTP) or
// LABEL=COMMAND ARGS... (stdio; arguments split at blanks, with '...' and "..."
// quoting).
func parseMCPFlag(v string) (mcp.Server, error) {
	label, rest, ok := strings.Cut(v, "=")
	label, rest = strings.TrimSpace(label), strings.TrimSpace(rest)
	if !ok || label == "" || rest == "" {
		return mcp.Server{}, fmt.Errorf("--mcp %q: want LABEL=COMMAND ARGS... or LABEL=https://URL", v)
	}
	if strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://") {
		return mcp.Server{Label: label, URL: rest}, nil
	}
	words, err := splitWords(rest)
	if err != nil {
		return mcp.Server{}, fmt.Errorf("--mcp %q: %w", v, err)
	}
	return mcp.Server{Label: label, Command: words[0], Args: words[1:]}, nil
}

// splitWords splits a command line at blanks; quotes group words and are removed.
// No variables, globs or escapes: hearth runs the command itself, with no shell.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("no command")
	}
	return words, nil
}

// mcpKeys are the keys of an [mcp.LABEL] table.
var mcpKeys = []string{"command", "args", "env", "url", "headers", "allowed_tools", "timeout", "keys"}

// configMCPValue reads the config file's mcp setting: a table of servers by label, or
// a list of --mcp strings.
func configMCPValue(v any) ([]mcp.Server, error) {
	switch v := v.(type) {
	case []any:
		var out []mcp.Server
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("a list of mcp servers holds LABEL=COMMAND strings, not %T", e)
			}
			srv, err := parseMCPFlag(s)
			if err != nil {
				return nil, err
			}
			out = append(out, srv)
		}
		return out, nil
	case string:
		srv, err := parseMCPFlag(v)
		return []mcp.Server{srv}, err
	case map[string]any:
		labels := make([]string, 0, len(v))
		for l := range v {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		var out []mcp.Server
		for _, label := range labels {
			t, ok := v[label].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("mcp.%s: want a table (%s)", label, strings.Join(mcpKeys, ", "))
			}
			srv, err := mcpTable(label, t)
			if err != nil {
				return nil, err
			}
			out = append(out, srv)
		}
		return out, nil
	}
	return nil, fmt.Errorf("mcp: want [mcp.LABEL] tables or a list of LABEL=COMMAND strings")
}

func mcpTable(label string, t map[string]any) (mcp.Server, error) {
	srv := mcp.Server{Label: label}
	err := readTable("mcp."+label, t, "an [mcp.LABEL] table has "+strings.Join(mcpKeys, ", "), map[string]any{
		"command": &srv.Command, "url": &srv.URL, "args": &srv.Args, "allowed_tools": &srv.AllowedTools, "keys": &srv.Keys,
		"env": &srv.Env, "headers": &srv.Headers,
		"timeout": func(v any) (err error) {
			switch d := v.(type) {
			case string:
				srv.Timeout, err = time.ParseDuration(d)
			case int64:
				srv.Timeout = time.Duration(d) * time.Second
			case int:
				srv.Timeout = time.Duration(d) * time.Second
			case float64:
				srv.Timeout = time.Duration(d * float64(time.Second))
			default:
				err = fmt.Errorf("want a duration (\"30s\") or seconds")
			}
			if err == nil && srv.Timeout <= 0 {
				err = fmt.Errorf("want a positive duration")
			}
			return err
		},
	})
	return srv, err
}

// readTable reads the keys of the config file's table p (their case, and - for _,
// aside) into the settings they name in fields: a *string takes a string, a *[]string
// a list of strings (given empty, an empty list: for allowed_tools and keys, none, not
// all), a *map[string]string a table of strings, a func(any) error reads the value
// itself. An error names the key (p.KEY); a key
// fields has not is unknown, and known says which are.
func readTable(p string, t map[string]any, known string, fields map[string]any) error {
	for k, v := range t {
		kp := p + "." + k
		var err error
		switch dst := fields[strings.ReplaceAll(strings.ToLower(k), "-", "_")].(type) {
		case *string:
			*dst, err = asString(v)
		case *[]string:
			*dst, err = asStrings(v)
		case *map[string]string:
			*dst, err = asStringMap(v)
		case func(any) error:
			err = dst(v)
		default:
			return fmt.Errorf("%s: unknown key (%s)", kp, known)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", kp, err)
		}
	}
	return nil
}

func asString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, not %T", v)
	}
	return s, nil
}

func asStrings(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, not %T", v)
	}
	out := []string{}
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("want a list of strings, not one holding %T", e)
		}
		out = append(out, s)
	}
	return out, nil
}

func asStringMap(v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a table of strings, not %T", v)
	}
	out := map[string]string{}
	for k, e := range m {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s: want a string, not %T", k, e)
		}
		out[k] = s
	}
	return out, nil
}

// mcpServers are the servers of --mcp and the config file; a label may be given once.
func mcpServers(flags []string) ([]mcp.Server, error) {
	servers := slices.Clone(configMCP)
	for _, f := range flags {
		s, err := parseMCPFlag(f)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}
	seen := map[string]bool{}
	for _, s := range servers {
		if seen[s.Label] {
			return nil, fmt.Errorf("mcp server %q is configured twice (--mcp and the config file share labels)", s.Label)
		}
		seen[s.Label] = true
	}
	return servers, nil
}
