package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"hearth/mcp"
)

// TestMCPConfig: [mcp.LABEL] tables in TOML and YAML, a list of --mcp strings, and the
// --mcp flag's two forms; mistakes name the setting.
func TestMCPConfig(t *testing.T) {
	dir := t.TempDir()
	toml := filepath.Join(dir, "hearth.toml")
	os.WriteFile(toml, []byte(`max_queue = 7

[mcp.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
env = { NODE_ENV = "production" }
allowed_tools = ["read_file", "list_directory"]
timeout = "20s"
keys = ["alice"]

[mcp.search]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer abc" }
timeout = 5
`), 0o600)
	want := []mcp.Server{
		{Label: "files", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"},
			Env: map[string]string{"NODE_ENV": "production"}, AllowedTools: []string{"read_file", "list_directory"}, Timeout: 20 * time.Second, Keys: []string{"alice"}},
		{Label: "search", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer abc"}, Timeout: 5 * time.Second},
	}
	vals, err := loadConfig(rootCommand(), toml)
	if err != nil || vals["max-queue"] != "7" {
		t.Fatalf("loadConfig = %v, %v", vals, err)
	}
	if !reflect.DeepEqual(configMCP, want) {
		t.Errorf("toml servers\n%+v\nwant\n%+v", configMCP, want)
	}

	yaml := filepath.Join(dir, "hearth.yaml")
	os.WriteFile(yaml, []byte(`mcp:
  files:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
    env: {NODE_ENV: production}
    allowed_tools: [read_file, list_directory]
    timeout: 20s
    keys: [alice]
  search:
    url: https://mcp.example.com/mcp
    headers: {Authorization: Bearer abc}
    timeout: 5
`), 0o600)
	if _, err := loadConfig(rootCommand(), yaml); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(configMCP, want) {
		t.Errorf("yaml servers\n%+v\nwant\n%+v", configMCP, want)
	}

	list := filepath.Join(dir, "list.toml")
	os.WriteFile(list, []byte(`mcp = ["echo=node server.js stdio", "web=http://127.0.0.1:3001/mcp"]`), 0o600)
	if _, err := loadConfig(rootCommand(), list); err != nil {
		t.Fatal(err)
	}
	wantList := []mcp.Server{{Label: "echo", Command: "node", Args: []string{"server.js", "stdio"}}, {Label: "web", URL: "http://127.0.0.1:3001/mcp"}}
	if !reflect.DeepEqual(configMCP, wantList) {
		t.Errorf("list servers %+v", configMCP)
	}
	// --mcp adds to the file's servers; a label twice is an error.
	servers, err := mcpServers([]string{`git=uvx mcp-server-git --repository "/src/my repo"`})
	if err != nil || len(servers) != 3 || !reflect.DeepEqual(servers[2], mcp.Server{Label: "git", Command: "uvx", Args: []string{"mcp-server-git", "--repository", "/src/my repo"}}) {
		t.Errorf("mcpServers = %+v, %v", servers, err)
	}
	if _, err := mcpServers([]string{"echo=other"}); err == nil || !strings.Contains(err.Error(), `"echo"`) {
		t.Errorf("a label twice: %v", err)
	}

	for body, wantErr := range map[string]string{
		"[mcp.x]\ncomand = \"a\"\n":     "mcp.x.comand: unknown key",
		"[mcp.x]\nargs = \"a b\"\n":     "mcp.x.args: want a list of strings",
		"[mcp.x]\ntimeout = \"soon\"\n": "mcp.x.timeout",
		"mcp = [3]\n":                   "LABEL=COMMAND strings",
	} {
		bad := filepath.Join(dir, "bad.toml")
		os.WriteFile(bad, []byte(body), 0o600)
		if _, err := loadConfig(rootCommand(), bad); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: %v, want an error with %q", body, err, wantErr)
		}
	}
	for _, flag := range []string{"", "noequals", "=cmd", "x=", `x=a "b`} {
		if _, err := parseMCPFlag(flag); err == nil {
			t.Errorf("--mcp %q parsed", flag)
		}
	}
	configMCP = nil
}

// TestServeRefusesBadMCP: hearth serve stops at a bad MCP setting before it opens
// anything.
func TestServeRefusesBadMCP(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mcp", "nolabel"}, "--mcp"},
		{[]string{"--mcp", "a=x", "--mcp", "a=y"}, `"a" is configured twice`},
		{[]string{"--mcp", `a=node "unclosed`}, "unclosed"},
		{[]string{"--mcp-allow-url", "https://a.example/*,"}, "empty --mcp-allow-url"},
	} {
		args := append([]string{"serve", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0"}, tc.args...)
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
			t.Errorf("%q: the data directory was created before the MCP settings were checked", tc.args)
		}
	}
}
