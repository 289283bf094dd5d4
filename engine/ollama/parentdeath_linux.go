package ollama

import "syscall"

// parentDeathSignalArmed: Linux delivers a signal of the runner's choosing when its
// parent dies (prctl PR_SET_PDEATHSIG), at once and without polling.
const parentDeathSignalArmed = true

// armParentDeathSignal asks the kernel to SIGKILL this process when its parent dies. A
// runner holds nothing that needs a clean exit: the model file is read-only and its
// state dies with the runtime that used it.
//
// The kernel ties the signal to the thread that started the process, not to the whole
// parent process. The Go runtime of hearth does not end threads it has started, except
// for goroutines locked to their thread, which the embedded runtime does not use.
func armParentDeathSignal() {
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
}
