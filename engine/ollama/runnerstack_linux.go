package ollama

import (
	"os"
	"strconv"
	"syscall"
)

// raiseRunnerStack raises this process's RLIMIT_STACK to runnerStack (or the hard
// limit, if lower) and reports whether the process must start again for its threads
// to get it. An unlimited soft limit is lowered too: glibc then gives threads only
// 32 MiB.
func raiseRunnerStack() (restart bool) {
	if os.Getenv(runnerStackEnv) != "" {
		return false
	}
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &r); err != nil {
		return false
	}
	const unlimited = ^uint64(0) // RLIM_INFINITY
	want := uint64(runnerStack)
	if r.Max != unlimited && r.Max < want {
		want = r.Max
	}
	if r.Cur == want || (r.Cur != unlimited && r.Cur > want) {
		return false
	}
	r.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_STACK, &r); err != nil {
		return false
	}
	os.Setenv(runnerStackEnv, strconv.FormatUint(want, 10))
	return true
}

// restartSelf executes this program again with the same arguments; it returns only
// on failure.
func restartSelf() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}
