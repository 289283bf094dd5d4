//go:build !linux

package testenv

import "syscall"

// serverAttr starts an ollama serve process in its own process group, which its model
// runners join, so Kill ends them all.
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
