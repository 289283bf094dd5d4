package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "hearth",
		Short: "Open Responses API server for local models",
		Long: `hearth serves the Open Responses API (POST /v1/responses) from open-weight models on
this machine. By default it runs the Ollama runtime inside its own process; with --ollama
it uses an Ollama server you already run. Models live where Ollama keeps them.`,
		Example: `  hearth serve                          # embedded runtime, http://127.0.0.1:8080
  hearth serve --ollama 127.0.0.1:11434 # use the Ollama you already run`,
		SilenceUsage: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(serveCommand(), versionCommand())
	root.AddCommand(benchCommand())
	return root
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hearth's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "hearth %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}

// bindEnv lets every flag of cmd also be set by an environment variable HEARTH_<FLAG>
// (dashes as underscores), and says so in the flag's help. A flag given on the command
// line wins over the variable.
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
