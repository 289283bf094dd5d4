package ollama

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/ollama/ollama/envconfig"
	"github.com/ollama/ollama/runner"
	"github.com/ollama/ollama/server"
	"github.com/ollama/ollama/version"

	"hearth/internal/cpubuild"
	"hearth/internal/parentdeath"
)

// RunnerCommand is the sub-command the embedded runtime re-executes this binary with to
// start a model runner. The program's main must hand it to RunRunner before anything else.
const RunnerCommand = "runner"

// Test binaries record no module versions, and the runner variants must be built from
// the same runtime as the binary that starts them.
func init() { cpubuild.RuntimeVersion = "v" + RuntimeVersion }

// RunRunner runs a child process of hearth's runtime: a model runner, as the ollama
// binary does for `ollama runner ...`, or a grammar check (GrammarCheckCommand). args
// are the process arguments after the program name, starting with the sub-command.
// When a runner variant compiled for more of this CPU's instruction sets than this
// binary's own kernels is installed (lib/hearth, internal/cpubuild), a model runner
// becomes that variant and this returns only if it could not.
func RunRunner(args []string) error {
	if args[0] == GrammarCheckCommand {
		return runGrammarWorker()
	}
	// End with hearth, however it ends; the CPU variant this may become arms again.
	parentdeath.Arm()
	// Before any thread of the runner exists: see runnerstack.go.
	restart := raiseRunnerStack()
	if err := cpubuild.ExecRunner(os.Args); err != nil {
		// A forced variant that is missing, or one that would not start: the built-in
		// kernels are slower but right.
		slog.Warn("cpu kernels: using the ones built into this binary", "error", err)
	} else {
		slog.Info("cpu kernels", "runner", cpubuild.Selected().Summary())
	}
	if restart {
		// The built-in kernels: this binary again, with the raised stack.
		if err := restartSelf(); err != nil {
			slog.Warn("runner: could not start again with a larger stack", "error", err)
		}
	}
	return runner.Execute(args)
}

// IsRunnerInvocation reports whether the process was started by hearth's runtime as
// one of its children: a model runner or a grammar check.
func IsRunnerInvocation(args []string) bool {
	return len(args) > 1 && (args[1] == RunnerCommand || args[1] == GrammarCheckCommand)
}

// EmbeddedConfig configures an in-process runtime.
type EmbeddedConfig struct {
	// ModelsDir overrides where models live; empty keeps OLLAMA_MODELS or Ollama's default
	// (~/.ollama/models), so models the user already pulled are there.
	ModelsDir string
	// NoGPU keeps the runtime on the CPU even when a GPU backend is built beside the
	// executable and finds a device (hearth serve --gpu=false).
	NoGPU bool
	// Log gets one line per model load saying how many layers run on which device
	// (see layers.go); nil logs none.
	Log *slog.Logger
}

// LogRequestsTo sends the embedded runtime's request log (a line per call of Ollama's
// API, written by its gin router; stdout by default) to w. It is process-wide: set it
// before StartEmbedded, e.g. where stdout belongs to a command's own output.
func LogRequestsTo(w io.Writer) { gin.DefaultWriter = w }

// embeddedStarted guards against a second start: Ollama's server registers its routes on
// net/http's default mux and keeps its scheduler in package state, so one process can
// host exactly one.
var embeddedStarted bool

// StartEmbedded starts Ollama's own server inside this process and waits until it
// answers. The runtime reads its configuration from OLLAMA_* environment variables when
// it starts, so this sets the ones hearth decides (the models directory, no pruning of
// the user's model store) before starting it. It listens on no address: only this
// process reaches it, through the returned Runtime's client and Transport.
//
// The runtime stops model runners itself on SIGINT and SIGTERM; call UnloadAll to stop
// them without a signal.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Runtime, error) {
	if embeddedStarted {
		return nil, fmt.Errorf("an embedded runtime already runs in this process")
	}
	ln := newPrivateListener()
	embeddedStarted = true
	os.Setenv(parentdeath.Env, strconv.Itoa(os.Getpid()))

	if cfg.ModelsDir != "" {
		os.Setenv("OLLAMA_MODELS", cfg.ModelsDir)
	}
	// Pruning deletes blobs no manifest names; an Ollama the user runs on the same store
	// may be in the middle of a pull, so hearth never prunes.
	if os.Getenv("OLLAMA_NOPRUNE") == "" {
		os.Setenv("OLLAMA_NOPRUNE", "1")
	}
	// Ollama's cloud (since v0.18) makes the runtime call ollama.com on its own: at
	// start (its cloud model list, model recommendations), and for any model named
	// "<name>:cloud" or "<tag>-cloud", which it forwards there with this machine's
	// ollama.com identity, without a local model behind the name. hearth serves the
	// models on this machine, and its /api passthrough lets user keys name any model,
	// so the embedded runtime runs without the cloud (such names are refused with a
	// 403) unless the user set OLLAMA_NO_CLOUD themselves.
	if _, set := os.LookupEnv("OLLAMA_NO_CLOUD"); !set {
		os.Setenv("OLLAMA_NO_CLOUD", "1")
	}

	configureGPU(cfg.NoGPU)
	installLayoutTaps(cfg.Log)

	// Ollama's release builds stamp their version with -ldflags; an embedding binary
	// does not, and ollama clients check /api/version, so report the module's version.
	if version.Version == "0.0.0" {
		version.Version = RuntimeVersion
	}

	// Requests name embeddedHost; the transport's dialer ignores it and connects to the
	// listener. No proxy: the runtime is in this process.
	u := &url.URL{Scheme: "http", Host: embeddedHost}
	rt := newRuntime(u, &http.Transport{
		DialContext:         ln.Dial,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	})
	rt.Embedded = true
	rt.ModelsDir = envconfig.Models()
	rt.stopped = make(chan struct{})
	go func() {
		// disconnectSafeListener: see there; without it a client leaving a stream
		// can wedge the model it was using.
		rt.err = server.Serve(disconnectSafeListener{ln})
		if rt.err == nil {
			rt.err = fmt.Errorf("runtime server returned")
		}
		close(rt.stopped)
	}()
	if err := rt.WaitReady(ctx); err != nil {
		return nil, err
	}
	installLogTap()
	// The devices, with the backend's names for them, once: hearth serve logs them, and
	// layers.go names the devices of each model's layout by them.
	if !cfg.NoGPU && len(GPUBackends()) > 0 {
		rt.GPUs = Devices(ctx)
	}
	return rt, nil
}

// Stopped is closed when an embedded runtime's server has returned (after SIGINT or
// SIGTERM, or a failure). It is nil for an external runtime.
func (r *Runtime) Stopped() <-chan struct{} { return r.stopped }

// embeddedHost is the host name of the embedded runtime's URL. It is never resolved (the
// connections are made by the private listener); a *.localhost name passes the
// runtime's own Host check (its DNS-rebinding protection) and says where it points.
const embeddedHost = "embedded.localhost"

// RuntimeVersion is the version of the github.com/ollama/ollama module hearth embeds (a
// test keeps it equal to go.mod's).
const RuntimeVersion = "0.24.0"
