package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/storage/sqlite"
	"hearth/toolgrammar"
)

// doctorCommand checks what hearth needs, one line per check, and fails if any check
// failed. It starts nothing: the runtime and models are asked through a running hearth,
// the database is opened directly.
func doctorCommand() *cobra.Command {
	var (
		o          clientOptions
		dataDir    string
		database   string
		modelsDir  string
		modelsFile string
		gpu        bool
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the running hearth, its runtime, the database, the models directory and each model's format",
		Long: `Check, one line each: that a hearth answers at --host and is healthy (its runtime
and database), the database in --data (opens, migrates, passes an integrity check, its
keys) or the one --database names (for PostgreSQL: reachable, its version, the schema's
version and the migrations pending, a write and its read-back, the latency, its keys), the models directory (exists and is readable), the models file, and for every
model of the runtime the tool-call and reasoning format hearth detects. It exits with
status 1 when a check fails.`,
		Example: `  hearth doctor
  hearth doctor --host http://gpu-box:8080 --api-key $KEY --data /var/lib/hearth
  hearth doctor --database postgres://hearth@db.example/hearth`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d := &doctor{out: c.OutOrStdout()}
			ctx := c.Context()
			formats, err := engine.LoadFormats(modelsFile)
			d.check("models file", func() (string, error) {
				if modelsFile == "" {
					return "built-in formats only", err
				}
				return modelsFile, err
			})
			d.check("cpu", cpubuild.Describe)
			d.checkGPU(ctx, gpu)
			if db := parseDatabase(database, dataDir); db.postgresURL != "" {
				d.checkPostgres(ctx, db)
			} else if database != "" {
				d.checkDatabaseFile(ctx, db.sqlitePath, dataDir)
			} else {
				d.checkDatabase(ctx, dataDir)
			}
			d.checkModelsDir(modelsDir)
			hc, err := o.client()
			if err != nil {
				return err
			}
			healthy := d.checkHearth(ctx, hc)
			if healthy && formats != nil {
				d.checkModels(ctx, hc, formats)
			}
			if d.failed > 0 {
				return fmt.Errorf("%d check(s) failed", d.failed)
			}
			fmt.Fprintln(d.out, "All checks passed.")
			return nil
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&dataDir, "data", defaultDataDir(), "directory of hearth's database")
	cmd.Flags().StringVar(&database, "database", "", "the database to check, as hearth serve's --database: a PostgreSQL URL or a SQLite file (default: hearth.db in --data)")
	cmd.Flags().StringVar(&modelsDir, "models", "", "models directory of the embedded runtime (default $OLLAMA_MODELS or ~/.ollama/models)")
	cmd.Flags().StringVar(&modelsFile, "models-file", "", "a models.json whose model formats extend or override the built-in ones")
	cmd.Flags().BoolVar(&gpu, "gpu", true, "look for GPU devices as hearth serve --gpu does")
	bindEnv(cmd)
	return cmd
}

type doctor struct {
	out    io.Writer
	failed int
}

func (d *doctor) check(what string, f func() (string, error)) bool {
	detail, err := f()
	if err != nil {
		d.failed++
		fmt.Fprintf(d.out, "FAIL  %-14s %v\n", what, err)
		return false
	}
	fmt.Fprintf(d.out, "ok    %-14s %s\n", what, detail)
	return true
}

func (d *doctor) checkDatabase(ctx context.Context, dataDir string) {
	d.checkDatabaseFile(ctx, filepath.Join(dataDir, databaseFile), dataDir)
}

// checkDatabaseFile checks a SQLite database; the lost-database check applies only to
// --data's own hearth.db.
func (d *doctor) checkDatabaseFile(ctx context.Context, path, dataDir string) {
	d.check("database", func() (string, error) {
		if path == filepath.Join(dataDir, databaseFile) {
			if err := checkDatabaseNotLost(dataDir); err != nil {
				return "", err
			}
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return path + " does not exist yet (hearth serve creates it)", nil
		}
		db, err := sqlite.Open(path) // the file's integrity check is SQLite's
		if err != nil {
			return "", err
		}
		defer db.Close()
		if err := db.IntegrityCheck(ctx); err != nil {
			return "", err
		}
		keys, err := db.ListKeys(ctx)
		if err != nil {
			return "", err
		}
		active := 0
		for _, k := range keys {
			if k.Active() {
				active++
			}
		}
		return fmt.Sprintf("%s: intact, %d active key(s), %d revoked", path, active, len(keys)-active), nil
	})
}

func (d *doctor) checkModelsDir(dir string) {
	d.check("models dir", func() (string, error) {
		source := "--models"
		if dir == "" {
			dir, source = os.Getenv("OLLAMA_MODELS"), "OLLAMA_MODELS"
		}
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir, source = filepath.Join(home, ".ollama", "models"), "default"
		}
		st, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return dir + " (" + source + ") does not exist yet; the embedded runtime creates it on the first pull", nil
		}
		if err != nil {
			return "", err
		}
		if !st.IsDir() {
			return "", fmt.Errorf("%s (%s) is not a directory", dir, source)
		}
		if _, err := os.ReadDir(dir); err != nil {
			return "", err
		}
		return dir + " (" + source + ", used by the embedded runtime)", nil
	})
}

func (d *doctor) checkHearth(ctx context.Context, hc *hearthClient) bool {
	var health struct {
		Status  string `json:"status"`
		Runtime struct {
			OK       bool   `json:"ok"`
			Embedded bool   `json:"embedded"`
			Error    string `json:"error"`
		} `json:"runtime"`
		Database *struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"database"`
	}
	ok := d.check("hearth", func() (string, error) {
		status, body, err := hc.health(ctx)
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(body, &health); err != nil {
			return "", fmt.Errorf("%s/healthz answered %d, not hearth's health: %.100s", hc.base, status, body)
		}
		return fmt.Sprintf("%s answers (%s)", hc.base, health.Status), nil
	})
	if !ok {
		return false
	}
	ok = d.check("runtime", func() (string, error) {
		kind := "external"
		if health.Runtime.Embedded {
			kind = "embedded"
		}
		if !health.Runtime.OK {
			return "", fmt.Errorf("%s runtime is down: %s", kind, health.Runtime.Error)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := hc.api.Version(ctx)
		if err != nil {
			return "", hc.explain(err)
		}
		// /healthz does not say where the runtime listens (it answers anyone); the
		// version came through hearth's passthrough.
		return fmt.Sprintf("%s Ollama %s, reached through hearth", kind, v), nil
	})
	if health.Database != nil {
		d.check("hearth's db", func() (string, error) {
			if !health.Database.OK {
				return "", errors.New(health.Database.Error)
			}
			return "the server's database answers", nil
		})
	}
	return ok
}

func (d *doctor) checkModels(ctx context.Context, hc *hearthClient, formats *toolgrammar.Registry) {
	list, err := hc.api.List(ctx)
	if !d.check("models", func() (string, error) {
		if err != nil {
			return "", hc.explain(err)
		}
		return fmt.Sprintf("%d model(s)", len(list.Models)), nil
	}) {
		return
	}
	eng := engine.New(hc.modelSeam(ctx), formats, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, m := range list.Models {
		d.check("  "+m.Name, func() (string, error) {
			em, err := eng.Model(ctx, m.Name)
			if err != nil {
				return "", err
			}
			var row modelRow
			row.fill(em)
			if em.Info.UnsupportedBy != "" {
				return "", fmt.Errorf("architecture %s: not in %s; serve it from an Ollama that can (hearth serve --runtime URL)",
					em.Info.Architecture, em.Info.UnsupportedBy)
			}
			if em.Format == nil {
				return "", errors.New("no format detected and no default format")
			}
			if em.UnknownMarkup != "" {
				return fmt.Sprintf("text only, requests with tools refused: no format for the runtime's %s (add one with --models-file), capabilities %s, context %s",
					em.UnknownMarkup, dash(row.caps), dash(row.context)), nil
			}
			return fmt.Sprintf("format %s, reasoning %s, capabilities %s, context %s", row.format, dash(row.reasoning), dash(row.caps), dash(row.context)), nil
		})
	}
}

// checkGPU reports the GPU backends built beside hearth and the devices they find, with
// their memory. It runs the runtime's own discovery in this process (a short-lived
// "hearth runner" per backend), so it answers for this machine whether or not a hearth
// is running. A build or machine without a GPU is not a failure: models run on the CPU.
func (d *doctor) checkGPU(ctx context.Context, gpu bool) {
	backends := ollama.GPUBackends()
	var devices []ollama.Device
	if len(backends) > 0 && gpu {
		// Discovery logs through slog's default logger; doctor's output is its lines.
		prev := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
		devices = ollama.DiscoverDevices(ctx, false)
		slog.SetDefault(prev)
	}
	d.check("gpu", func() (string, error) {
		switch {
		case len(backends) == 0:
			return "CPU build, no GPU backend in " + ollama.LibDir() + " (make build GPU=cuda or GPU=vulkan)", nil
		case !gpu:
			return fmt.Sprintf("backend %s, disabled (--gpu=false): models run on the CPU", strings.Join(backends, ",")), nil
		case len(devices) == 0:
			return fmt.Sprintf("backend %s, no device found: models run on the CPU (%s)", strings.Join(backends, ","), ollama.NoDeviceReasons(backends)), nil
		}
		return fmt.Sprintf("backend %s, %d device(s)", strings.Join(backends, ","), len(devices)), nil
	})
	for _, dev := range devices {
		d.check("  "+dev.Name, func() (string, error) {
			kind := ""
			if dev.Integrated {
				kind = " (integrated)"
			}
			return fmt.Sprintf("%s%s, memory %s total, %s free, id %s", dev.Description, kind,
				binaryBytes(dev.TotalMemory), binaryBytes(dev.FreeMemory), dev.ID), nil
		})
	}
}
