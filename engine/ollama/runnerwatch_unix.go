//go:build unix

package ollama

import (
	"errors"
	"syscall"
	"time"
)

// watchRunner calls stopped once the process pid is gone. The runtime waits on its
// runners itself (a second wait would take its exit status), so this asks the kernel
// whether the process still exists, twice a second: a runner lives for minutes.
func watchRunner(pid int, stopped func()) {
	go func() {
		for {
			time.Sleep(500 * time.Millisecond)
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				stopped()
				return
			}
		}
	}()
}
