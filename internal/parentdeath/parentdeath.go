// Package parentdeath ends a child process of hearth when the hearth process that
// started it ends, however it ends. The runtime stops its model runners on SIGINT and
// SIGTERM, but a SIGKILL, a crash or the OOM killer gives it no chance: without this the
// runners were re-parented to init and kept their memory and loopback ports for ever.
//
// A parent names itself to its children in the environment (Name); a child calls Arm
// first thing, and again after it replaced itself with another program (the CPU variant
// of the model runner).
package parentdeath

import (
	"os"
	"strconv"
	"time"
)

// Env carries the parent's process id to the children it starts (they inherit the
// environment), so a child can tell whether the process that started it is still its
// parent.
const Env = "HEARTH_RUNNER_PARENT"

// pollEvery is how often a child looks at who its parent is.
const pollEvery = 250 * time.Millisecond

// useSignal is false only in this package's tests, which check the look-out alone.
var useSignal = true

// Arm makes this process end when its parent (named by Env) ends. Without Env it does
// nothing: the process was not started by hearth.
//
// Two mechanisms, either of which ends the process: where the platform has one, a
// signal the kernel sends when the parent dies (at once); and, everywhere, a look-out
// that exits once the process was re-parented. The signal alone did not always suffice:
// a runner that replaced itself with its CPU variant once outlived a killed hearth on
// a loaded CI machine (the kernel keeps the signal per thread, and drops it on an exec
// it considers privileged), and the cost of the look-out is one getppid a quarter
// second.
func Arm() {
	parent, err := strconv.Atoi(os.Getenv(Env))
	if err != nil || parent <= 1 {
		return
	}
	if useSignal {
		armSignal()
	}
	// The parent may have died before this: it is then no longer the parent, and
	// nothing else would end this process.
	if os.Getppid() != parent {
		os.Exit(1)
	}
	go func() {
		for range time.Tick(pollEvery) {
			if os.Getppid() != parent {
				os.Exit(1)
			}
		}
	}()
}

// Name returns the Env entry that names this process as the parent of the children it
// starts.
func Name() string { return Env + "=" + strconv.Itoa(os.Getpid()) }
