package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/storage/sqlite"
	"hearth/toolgrammar"
)

// doctorCommand checks what `hearth serve` would use, given the same flags, config file
// and environment: it declares serve's flags and resolves them with serve's own
// resolveServe, then checks each thing, one line each, with a fix under each failure.
// It starts nothing and listens nowhere; a hearth already serving at the address is asked
// through its API.
func doctorCommand() *cobra.Command {
	var (
		so serveOptions
		o  clientOptions
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what hearth serve will use: address, data, database, keys, runtimes, models, CPU and GPU",
		Long: `Check, one line each, what hearth serve would use when given the same flags, config
file and environment (doctor takes every flag of serve, and resolves them as serve does):
the settings themselves; the address (free, or a hearth already answers there: then its
health, its runtime and, for every model it serves, the tool-call and reasoning format
hearth detects); the data directory (writable, its free disk space); the database (a
SQLite file opens, migrates and passes an integrity check, or a PostgreSQL database is
reachable, with its version, the schema's and the migrations pending, a write and its
read-back, the latency); the keys (--admin-key and the database's, and whether serve
would refuse its address without them); the models file; each runtime: the embedded one
(its models directory and the models in it, the CPU kernels and the GPU it will use) and
each external one (reachable, its version, its models). Under a failed check a line says
how to fix it. It exits with status 1 when a check fails.

--host checks the hearth at that URL instead of the one at --addr; --api-key is the key
doctor sends it (default: the first --admin-key).`,
		Example: `  hearth doctor
  hearth --config /etc/hearth.toml doctor        # the settings hearth serve --config /etc/hearth.toml uses
  hearth doctor --addr 0.0.0.0:8080 --data /var/lib/hearth
  hearth doctor --database postgres://hearth@db.example/hearth`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runDoctor(c.Context(), c.OutOrStdout(), so, o, c.Flags().Changed("host") || o.host != "")
		},
	}
	addServeFlags(cmd.Flags(), &so)
	cmd.Flags().StringVar(&o.host, "host", "", "URL of a running hearth to check instead of the one at --addr")
	cmd.Flags().StringVar(&o.apiKey, "api-key", "", "API key to send to the running hearth (default: the first --admin-key)")
	bindEnv(cmd)
	return cmd
}

// runDoctor checks each thing serve would use; hostGiven says --host names the hearth to
// ask instead of the one at the address.
func runDoctor(ctx context.Context, out io.Writer, so serveOptions, o clientOptions, hostGiven bool) error {
	d := &doctor{out: out}
	s, err := resolveServe(so)
	if !d.check("settings", func() (string, error) {
		if err != nil {
			return "", withFix(err, "correct that setting (a flag, its HEARTH_ variable or the config file); hearth serve refuses it too")
		}
		return "as hearth serve reads them: " + configSource(), nil
	}) {
		return fmt.Errorf("%d check(s) failed", d.failed)
	}
	if o.apiKey == "" && len(s.adminKeys) > 0 {
		o.apiKey = s.adminKeys[0]
	}
	running := d.checkAddress(ctx, s.addr, o)
	d.checkDataDir(s.dataDir)
	var keys dbKeys
	if db := s.database; db.postgresURL != "" {
		keys = d.checkPostgres(ctx, db)
	} else {
		keys = d.checkDatabaseFile(ctx, db.sqlitePath, s.dataDir)
	}
	d.checkKeys(s, so.noAuth, keys)
	d.check("models file", func() (string, error) {
		if so.modelsFile == "" {
			return "built-in formats only", nil
		}
		return so.modelsFile, nil
	})
	for _, r := range s.runtimes {
		if r.embedded {
			d.checkEmbedded(ctx, s, so.gpu)
		} else {
			d.checkExternal(ctx, r)
		}
	}
	if hostGiven || running {
		host := o.host
		if !hostGiven {
			host = hostOf(s.addr)
		}
		o.host = host
		hc, err := o.client()
		if err != nil {
			return err
		}
		if d.checkHearth(ctx, hc) && s.formats != nil {
			d.checkModels(ctx, hc, s.formats)
		}
	}
	if d.failed > 0 {
		return fmt.Errorf("%d check(s) failed", d.failed)
	}
	fmt.Fprintln(d.out, "All checks passed.")
	return nil
}

// configSource says where settings not on the command line came from.
func configSource() string {
	if configFile != "" {
		return "flags, HEARTH_* variables, then the config file " + configFile
	}
	return "flags and HEARTH_* variables (no config file)"
}

type doctor struct {
	out    io.Writer
	failed int
}

// fixError is a failed check's cause with what to do about it.
type fixError struct {
	err error
	fix string
}

func (e *fixError) Error() string { return e.err.Error() }
func (e *fixError) Unwrap() error { return e.err }

func withFix(err error, fix string) error { return &fixError{err: err, fix: fix} }

func (d *doctor) check(what string, f func() (string, error)) bool {
	detail, err := f()
	if err != nil {
		d.failed++
		fmt.Fprintf(d.out, "FAIL  %-14s %v\n", what, err)
		if fe := (*fixError)(nil); errors.As(err, &fe) {
			fmt.Fprintf(d.out, "      %-14s %s\n", "fix:", fe.fix)
		}
		return false
	}
	fmt.Fprintf(d.out, "ok    %-14s %s\n", what, detail)
	return true
}

// hostOf is the URL at which a hearth listening on addr answers this machine: an
// unspecified address (all interfaces) is reached on loopback.
func hostOf(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// checkAddress checks that serve can listen on addr, as it will: free, or a hearth
// already serves there (reported true: its own checks follow).
func (d *doctor) checkAddress(ctx context.Context, addr string, o clientOptions) (running bool) {
	d.check("address", func() (string, error) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return addr + " is free: hearth serve can listen there", nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return "", withFix(fmt.Errorf("%s: cannot listen: %w", addr, err),
				"give --addr (HEARTH_ADDR, addr in the config file) an address of this machine, such as 127.0.0.1:8080 or 0.0.0.0:8080")
		}
		o.host = hostOf(addr)
		hc, cerr := o.client()
		if cerr == nil {
			if _, body, herr := hc.health(ctx); herr == nil && json.Valid(body) && strings.Contains(string(body), `"runtime"`) {
				running = true
				return addr + " is in use by a running hearth (its checks follow); hearth serve starts there once it stops", nil
			}
		}
		return "", withFix(fmt.Errorf("%s is in use by another program, not a hearth", addr),
			"stop that program (ss -ltnp shows it), or give hearth serve another --addr (HEARTH_ADDR, addr in the config file)")
	})
	return running
}

// checkDataDir checks that serve can create its database and key in dir, and the
// space left for them.
func (d *doctor) checkDataDir(dir string) {
	d.check("data dir", func() (string, error) {
		fix := "make it writable by this user (chown/chmod), or give --data (HEARTH_DATA, data in the config file) another directory"
		probe, exists := dir, true
		for {
			st, err := os.Stat(probe)
			if err == nil {
				if !st.IsDir() {
					return "", withFix(fmt.Errorf("%s is not a directory", probe), fix)
				}
				break
			}
			exists = false
			parent := filepath.Dir(probe)
			if parent == probe {
				return "", withFix(err, fix)
			}
			probe = parent
		}
		f, err := os.CreateTemp(probe, ".hearth-doctor-*")
		if err != nil {
			return "", withFix(fmt.Errorf("%s: not writable: %w", probe, err), fix)
		}
		f.Close()
		os.Remove(f.Name())
		state := "writable"
		if !exists {
			state = "does not exist yet (hearth serve creates it; " + probe + " is writable)"
		}
		free, err := freeDisk(probe)
		if err != nil {
			return fmt.Sprintf("%s %s, free space unknown (%v)", dir, state, err), nil
		}
		if free < minFreeDisk {
			return "", withFix(fmt.Errorf("%s %s but only %s free on its disk", dir, state, binaryBytes(free)),
				"free space there (the database grows with every stored response), or give --data another disk")
		}
		return fmt.Sprintf("%s %s, %s free", dir, state, binaryBytes(free)), nil
	})
}

// minFreeDisk is the free space under which doctor fails the data directory: SQLite
// needs room for its write-ahead log and a checkpoint, and a full disk fails every write.
const minFreeDisk = 100 << 20

// dbKeys counts the keys a database holds; known is false where it holds no schema yet
// or could not be read.
type dbKeys struct {
	known           bool
	active, revoked int
}

// checkDatabaseFile checks a SQLite database and counts its keys; the lost-database
// check applies only to --data's own hearth.db.
func (d *doctor) checkDatabaseFile(ctx context.Context, path, dataDir string) (keys dbKeys) {
	d.check("database", func() (string, error) {
		if path == filepath.Join(dataDir, databaseFile) {
			if err := checkDatabaseNotLost(dataDir); err != nil {
				return "", withFix(err, "restore it from a backup, or start hearth serve once with "+newDatabaseFlag)
			}
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return path + " does not exist yet (hearth serve creates it)", nil
		}
		db, err := sqlite.Open(path) // applies the migrations serve would apply
		if err != nil {
			return "", withFix(fmt.Errorf("%s: %w", path, err), "check the file's permissions; if it is damaged, restore it from a backup")
		}
		defer db.Close()
		if err := db.IntegrityCheck(ctx); err != nil {
			return "", withFix(fmt.Errorf("%s: %w", path, err),
				"restore it from a backup, salvage it (sqlite3 FILE .recover | sqlite3 recovered.db), or start hearth serve with "+newDatabaseFlag)
		}
		list, err := db.ListKeys(ctx)
		if err != nil {
			return "", err
		}
		active := 0
		for _, k := range list {
			if k.Active() {
				active++
			}
		}
		keys = dbKeys{known: true, active: active, revoked: len(list) - active}
		return fmt.Sprintf("%s: migrated, intact", path), nil
	})
	return keys
}

// checkKeys reports the keys serve will accept and fails where serve would refuse its
// address for the lack of them (checkExposure).
func (d *doctor) checkKeys(s *serveSettings, noAuth bool, keys dbKeys) {
	d.check("keys", func() (string, error) {
		what := fmt.Sprintf("%d admin key(s) from --admin-key; the database has none yet", len(s.adminKeys))
		if keys.known {
			what = fmt.Sprintf("%d admin key(s) from --admin-key; in the database %d active key(s), %d revoked", len(s.adminKeys), keys.active, keys.revoked)
		}
		// serve counts a database key ever created, revoked ones too (HasKeys).
		inDB := keys.active+keys.revoked > 0
		if err := checkExposure(s.addr, s.adminKeys, noAuth || inDB); err != nil {
			return "", withFix(fmt.Errorf("%s: hearth serve refuses --addr %s, reachable from other machines, without keys", what, s.addr),
				"create a key (hearth keys create --name NAME) or set --admin-key (HEARTH_ADMIN_KEY), or pass --insecure-no-auth to serve without keys")
		}
		switch {
		case len(s.adminKeys) > 0 || inDB:
			return what + ": requests need a key", nil
		case noAuth:
			return what + ": --insecure-no-auth, requests need none", nil
		}
		return what + ": requests need none (loopback only)", nil
	})
}

// checkEmbedded checks what the embedded runtime will use: its models directory (and
// the models in it), the CPU kernels its runners run, the GPU.
func (d *doctor) checkEmbedded(ctx context.Context, s *serveSettings, gpu bool) {
	d.check("runtime", func() (string, error) {
		return "embedded Ollama " + ollama.RuntimeVersion + " (in hearth's process)", nil
	})
	d.checkModelsDir(s.modelsDir, s.modelsFrom)
	d.check("cpu", func() (string, error) {
		desc, err := cpubuild.Describe()
		if err != nil {
			return "", withFix(err, "build hearth for this CPU (make build), or unset HEARTH_CPU_VARIANT if it names a variant this CPU cannot run")
		}
		return desc, nil
	})
	d.checkGPU(ctx, gpu)
}

func (d *doctor) checkModelsDir(dir, from string) {
	d.check("models dir", func() (string, error) {
		st, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return dir + " (" + from + ") does not exist yet; the embedded runtime creates it on the first pull", nil
		}
		fix := "give --models (HEARTH_MODELS, models in the config file) or OLLAMA_MODELS a directory this user can read"
		if err != nil {
			return "", withFix(err, fix)
		}
		if !st.IsDir() {
			return "", withFix(fmt.Errorf("%s (%s) is not a directory", dir, from), fix)
		}
		names, err := localModels(dir)
		if err != nil {
			return "", withFix(err, fix)
		}
		held := "no models yet (hearth pull NAME)"
		if len(names) > 0 {
			held = fmt.Sprintf("%d model(s): %s", len(names), strings.Join(names, ", "))
		}
		return fmt.Sprintf("%s (%s): %s", dir, from, held), nil
	})
}

// localModels names the models an Ollama models directory holds: one manifest file per
// name and tag under manifests/HOST/NAMESPACE/MODEL/TAG, named as Ollama lists them
// (the default registry and namespace left out).
func localModels(dir string) ([]string, error) {
	root := filepath.Join(dir, "manifests")
	var names []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == root {
			return fs.SkipAll
		}
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 {
			return nil
		}
		name := parts[2] + ":" + parts[3]
		switch {
		case parts[0] != "registry.ollama.ai":
			name = parts[0] + "/" + parts[1] + "/" + name
		case parts[1] != "library":
			name = parts[1] + "/" + name
		}
		names = append(names, name)
		return nil
	})
	slices.Sort(names)
	return names, err
}

// checkExternal checks an Ollama server serve would use: reachable, its version and
// models.
func (d *doctor) checkExternal(ctx context.Context, r runtimeSpec) {
	d.check("runtime", func() (string, error) {
		rt, err := ollama.Connect(r.url)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := rt.Client.Version(ctx)
		if err != nil {
			return "", withFix(fmt.Errorf("%s (%s) does not answer: %w", rt.URL, r.source, err),
				"start that Ollama (ollama serve, with OLLAMA_HOST set to its address), or correct "+r.source)
		}
		list, err := rt.Client.List(ctx)
		if err != nil {
			return "", fmt.Errorf("%s (%s) Ollama %s: listing its models: %w", rt.URL, r.source, v, err)
		}
		return fmt.Sprintf("%s (%s): Ollama %s, %d model(s)", rt.URL, r.source, v, len(list.Models)), nil
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
	ok = d.check("its runtime", func() (string, error) {
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
