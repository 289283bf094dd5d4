package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"hearth/engine/ollama"
)

// configFile is the --config (or $HEARTH_CONFIG) file this run read, "" for none.
var configFile string

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func rootCommand() *cobra.Command {
	var configPath string
	root := &cobra.Command{
		Use:   "hearth",
		Short: "Open Responses API server for local models",
		Long: `hearth serves the Open Responses API (POST /v1/responses) from open-weight models on
this machine. By default it runs the Ollama runtime inside its own process; with --ollama
it uses an Ollama server you already run. Models live where Ollama keeps them.

Settings: every flag can also be set as HEARTH_<FLAG> (dashes as underscores) or in the
--config file (TOML or YAML, keys are flag names); a flag on the command line wins over
the variable, which wins over the file.`,
		Example: `  hearth serve                                  # embedded runtime, http://127.0.0.1:8080
  hearth serve --ollama 127.0.0.1:11434         # use the Ollama you already run
  hearth serve --config /etc/hearth.toml        # settings from a file
  hearth keys create --name alice               # a key for alice, printed once
  hearth keys list                              # every key, revoked ones too
  hearth keys revoke alice                      # alice's key stops working at once
  hearth models                                 # models of a running hearth, with their formats
  hearth show qwen3:8b --template               # the chat template that renders a model
  hearth pull qwen3:0.6b                        # download a model through a running hearth
  hearth doctor                                 # check what serve will use: address, data, database, keys, runtimes, models
  hearth db copy --from sqlite://hearth.db --to postgres://db/hearth   # move to PostgreSQL
  hearth bench --quick                          # hearth against the runtime's own endpoints
  hearth script-models --models /tmp/models     # deterministic test models, offline
  hearth version                                # hearth's and the runtime's versions`,
		SilenceUsage: true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			path := configPath
			if !c.Flags().Changed("config") {
				if env, ok := os.LookupEnv("HEARTH_CONFIG"); ok {
					path = env
				}
			}
			configMCP = nil // only a config file read now sets MCP servers
			configFile = path
			if path == "" {
				return nil
			}
			var err error
			configValues, err = loadConfig(c.Root(), path)
			return err
		},
	}
	root.PersistentFlags().StringVar(&configPath, "config", "", "TOML or YAML file of settings, keys named as flags [$HEARTH_CONFIG]")
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(serveCommand(), keysCommand(), modelsCommand(), showCommand(), pullCommand(), doctorCommand(), dbCommand(), benchCommand(), scriptModelsCommand(), versionCommand())
	// Errors go to the standard error this process started with: serve hands the
	// os.Stderr variable to the embedded runtime's output (ollama.CaptureOutput), and a
	// command's error must still reach the user.
	root.SetErr(os.Stderr)
	return root
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print hearth's version and the Ollama runtime it embeds",
		Example: "  hearth version",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "hearth %s (%s, %s/%s)\nollama runtime %s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, ollama.RuntimeVersion)
		},
	}
}

// bindEnv lets every flag of cmd also be set by an environment variable HEARTH_<FLAG>
// (dashes as underscores) or the --config file, and says so in the flag's help. A flag
// given on the command line wins over the variable, the variable over the file.
func bindEnv(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		env := envName(f.Name)
		f.Usage += fmt.Sprintf(" [$%s]", env)
	})
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		var err error
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if err != nil || f.Changed {
				return
			}
			if v, ok := os.LookupEnv(envName(f.Name)); ok {
				if e := f.Value.Set(v); e != nil {
					err = fmt.Errorf("$%s: %w", envName(f.Name), e)
				}
			} else if v, ok := configValues[f.Name]; ok {
				if e := f.Value.Set(v); e != nil {
					err = fmt.Errorf("config setting %s: %w", f.Name, e)
				}
			}
		})
		if err == nil && prev != nil {
			err = prev(c, args)
		}
		return err
	}
}

func envName(flag string) string {
	return "HEARTH_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// defaultDataDir is the platform's per-user data directory for hearth: the database and
// keys live there.
func defaultDataDir() string {
	home, _ := os.UserHomeDir()
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", "hearth")
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "hearth")
		}
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "hearth")
	}
	return filepath.Join(home, ".local", "share", "hearth")
}
