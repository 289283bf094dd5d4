//go:build !linux

package pgtest

import (
	"os"
	"os/exec"
)

func ownForServer(dir string) error { return nil }

func runAsServer(cmd *exec.Cmd) {}

func stopServer(cmd *exec.Cmd) { cmd.Process.Signal(os.Interrupt) }
