package ollama

import (
	"os"
	"strconv"
	"time"
)

// runnerParentEnv carries the embedded runtime's process id to the runners it starts
// (they inherit hearth's environment), so a runner can tell whether the process that
// started it is still its parent.
const runnerParentEnv = "HEARTH_RUNNER_PARENT"

// dieWithParent makes a model runner end when the hearth process that started it ends,
// however it ends. The runtime stops its runners on SIGINT and SIGTERM, but a SIGKILL,
// a crash or the OOM killer gives it no chance: the runners were re-parented to init and
// kept their memory and their loopback ports for ever.
func dieWithParent() {
	parent, err := strconv.Atoi(os.Getenv(runnerParentEnv))
	if err != nil || parent <= 1 {
		// Not started by an embedded runtime of hearth: nothing to watch.
		return
	}
	armParentDeathSignal()
	// The parent may have died before the signal was armed: it is then no longer the
	// parent, and nothing else would end this runner.
	if os.Getppid() != parent {
		os.Exit(1)
	}
	if !parentDeathSignalArmed {
		// No parent-death signal on this platform: look for the re-parenting instead.
		go func() {
			for range time.Tick(250 * time.Millisecond) {
				if os.Getppid() != parent {
					os.Exit(1)
				}
			}
		}()
	}
}
