// Package gomodule finds hearth's own module and the go command, for the test harnesses
// that build and start real programs (the embedded runtime's external server, Jaeger).
package gomodule

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Root is the directory of hearth's go.mod, at or above the working directory (a
// test runs in its package's directory).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module hearth\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("hearth's go.mod not found above the working directory")
		}
		dir = parent
	}
}

// GoTool is the go command: the one on PATH (go test puts its own first), else the one
// of the toolchain this binary was built with.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
