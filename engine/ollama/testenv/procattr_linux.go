package testenv

import "syscall"

// serverAttr starts an ollama serve process in its own process group, which its model
// runners join (so Kill ends them all), and has the kernel send it SIGTERM if the test
// process dies without shutting it down (a timeout's panic, a signal): it then stops its
// runners itself.
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
