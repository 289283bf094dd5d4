package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"hearth/engine"
	"hearth/internal/urlpolicy"
	"hearth/mcp"
	"hearth/server"
	"hearth/toolgrammar"
)

// serveSettings are what `hearth serve` will use, resolved from its flags (each already
// set from the command line, HEARTH_<FLAG> or the config file, see bindEnv) and the
// OLLAMA_* variables serve reads. serve and doctor both get them from resolveServe, so
// doctor checks exactly the address, data directory, database, runtimes, models
// directory and keys that serve would use.
type serveSettings struct {
	addr     string
	dataDir  string
	database databaseSpec
	runtimes []runtimeSpec
	// modelsDir is the embedded runtime's models directory and modelsFrom where that
	// came from: --models, OLLAMA_MODELS or Ollama's default.
	modelsDir, modelsFrom string
	adminKeys             []string
	formats               *toolgrammar.Registry
	aliases               *engine.Aliases
	mcpServers            []mcp.Server
	fileURLs              *urlpolicy.Policy
}

// embedded reports whether the embedded runtime is among the runtimes.
func (s *serveSettings) embedded() bool {
	for _, r := range s.runtimes {
		if r.embedded {
			return true
		}
	}
	return false
}

// resolveServe checks serve's settings, each against what it must be, and resolves the
// ones with defaults from elsewhere (the database in --data, the runtimes from
// OLLAMA_HOST, the models directory from OLLAMA_MODELS). It starts, opens and creates
// nothing: doctor calls it too.
func resolveServe(o serveOptions) (*serveSettings, error) {
	if o.wsLifetime <= 0 {
		return nil, fmt.Errorf("--websocket-lifetime %v: want a positive duration, such as 60m", o.wsLifetime)
	}
	if o.wsQueue <= 0 {
		return nil, fmt.Errorf("--websocket-queue-bytes %d: want a positive number of bytes", o.wsQueue)
	}
	if o.bodiesAll < o.maxBody {
		return nil, fmt.Errorf("--request-bytes-total %d: want at least --max-body-bytes (%d)", o.bodiesAll, o.maxBody)
	}
	if o.wsQueueAll <= 0 {
		return nil, fmt.Errorf("--websocket-queue-total-bytes %d: want a positive number of bytes", o.wsQueueAll)
	}
	if o.writeTimeout <= 0 {
		return nil, fmt.Errorf("--write-timeout %v: want a positive duration, such as 1m", o.writeTimeout)
	}
	if err := checkKeys(o.apiKeys); err != nil {
		return nil, err
	}
	if err := server.CheckTrustedProxies(o.trustProxies); err != nil {
		return nil, fmt.Errorf("--trusted-proxies: %w", err)
	}
	if o.journalKeep < 0 {
		return nil, fmt.Errorf("--journal-retention %v: want a duration of zero or more, such as 168h", o.journalKeep)
	}
	if o.replicaLease <= 0 {
		return nil, fmt.Errorf("--replica-lease %v: want a positive duration, such as 15s", o.replicaLease)
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return nil, fmt.Errorf("--addr %q: %w (want HOST:PORT, such as 127.0.0.1:8080)", o.addr, err)
	}
	if o.dataDir == "" {
		return nil, errors.New("--data is empty: give the directory of hearth's database and keys")
	}
	s := &serveSettings{addr: o.addr, dataDir: o.dataDir, adminKeys: o.apiKeys}
	var err error
	if s.mcpServers, err = mcpServers(o.mcp); err != nil {
		return nil, err
	}
	if s.formats, err = engine.LoadFormats(o.modelsFile); err != nil {
		return nil, err
	}
	if s.aliases, err = modelAliases(o.modelAliases); err != nil {
		return nil, err
	}
	if s.fileURLs, err = urlpolicy.New("--file-allow-url", o.fileAllowURL); err != nil {
		return nil, err
	}
	if s.runtimes, err = runtimeSpecs(o); err != nil {
		return nil, err
	}
	s.database = parseDatabase(o.database, o.dataDir)
	s.modelsDir, s.modelsFrom = modelsDir(o.modelsDir)
	return s, nil
}

// modelsDir is the embedded runtime's models directory as Ollama resolves it: --models,
// else OLLAMA_MODELS, else ~/.ollama/models.
func modelsDir(flag string) (dir, from string) {
	if flag != "" {
		return flag, "--models"
	}
	if env := os.Getenv("OLLAMA_MODELS"); env != "" {
		return env, "OLLAMA_MODELS"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".ollama", "models"), "default"
}
