package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// configValues are the settings of the --config file, by flag name, as the text a flag
// parses. Root's PersistentPreRunE loads them; bindEnv applies them to flags neither
// given on the command line nor set by their environment variable.
var configValues map[string]string

// loadConfig reads a TOML or YAML file (by extension; .toml, .yaml or .yml) whose keys
// are flag names, e.g.
//
//	addr = "0.0.0.0:8080"
//	admin-key = ["ops-key-1", "ops-key-2"]
//	max-queue = 64
//
// Underscores may stand for dashes (admin_key). A key no command has is an error, so a
// typo does not silently leave a default in place.
func loadConfig(root *cobra.Command, path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	raw := map[string]any{}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".toml":
		err = toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	case ".yaml", ".yml":
		err = yaml.Unmarshal(data, &raw)
	default:
		return nil, fmt.Errorf("config %s: want a .toml, .yaml or .yml file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	known := allFlagNames(root)
	out := map[string]string{}
	configMCP, configWebSearch = nil, nil
	for k, v := range raw {
		name := strings.ReplaceAll(strings.ToLower(k), "_", "-")
		if name == "hosted" {
			// Hosted tools backed by configured servers: tables no flag can hold.
			ws, err := configHostedValue(v)
			if err != nil {
				return nil, fmt.Errorf("config %s: %w", path, err)
			}
			configWebSearch = ws
			continue
		}
		if !known[name] || name == "config" || name == "help" {
			return nil, fmt.Errorf("config %s: unknown setting %q (settings are flag names, see hearth <command> --help)", path, k)
		}
		if name == "mcp" {
			// MCP servers are tables ([mcp.LABEL]), which no flag can hold.
			servers, err := configMCPValue(v)
			if err != nil {
				return nil, fmt.Errorf("config %s: %w", path, err)
			}
			configMCP = servers
			continue
		}
		s, err := configText(v)
		if err != nil {
			return nil, fmt.Errorf("config %s: %s: %w", path, k, err)
		}
		out[name] = s
	}
	return out, nil
}

// configText renders a TOML/YAML value as flag text: lists comma-joined, the rest as
// printed.
func configText(v any) (string, error) {
	switch v := v.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			s, err := configText(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", fmt.Errorf("tables are not settings; write flag names at the top level")
	case nil:
		return "", nil
	default:
		return fmt.Sprint(v), nil
	}
}

func allFlagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return names
}

// configFlagNames lists the settings a config file may hold, for help text.
func configFlagNames(root *cobra.Command) []string {
	var out []string
	for n := range allFlagNames(root) {
		if n != "help" && n != "config" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
