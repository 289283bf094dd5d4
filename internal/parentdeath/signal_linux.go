package parentdeath

import "syscall"

// armSignal asks the kernel to SIGKILL this process when its parent dies
// (prctl PR_SET_PDEATHSIG). A child of hearth holds nothing that needs a clean exit:
// model files are read-only and a runner's state dies with the runtime that used it.
//
// The kernel ties the signal to the thread of the parent that started the process; the
// Go runtime of hearth does not end threads it has started, except for goroutines
// locked to their thread, which the embedded runtime does not use.
func armSignal() {
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
}
