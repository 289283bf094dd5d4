package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RunnerPIDs lists the model runner processes this executable started: the embedded
// runtime re-executes the binary as `<binary> runner ...`, with --model once a model is
// loaded (a GPU-discovery runner has none).
func RunnerPIDs(modelsOnly bool) []int {
	self, _ := os.Executable()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[0] == self && args[1] == "runner" && (!modelsOnly || strings.Contains(string(b), "--model")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillRunners SIGKILLs the model runners of this executable, as a crash would.
func KillRunners() {
	for _, pid := range RunnerPIDs(true) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ProcessAlive reports whether pid runs (a zombie, state Z, has exited).
func ProcessAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}
