//go:build !linux

package pgtest

import (
	"os"
	"os/exec"
)

func ownForServer(dir string) error { return nil }

func runAsServer(cmd *exec.Cmd) {}

func signalStop(cmd *exec.Cmd) { cmd.Process.Signal(os.Interrupt) }
