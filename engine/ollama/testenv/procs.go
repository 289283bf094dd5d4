package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// RunnerPIDs lists the model runner processes of the shared runtime: the embedded
// runtime re-executes this binary as `<binary> runner ...`, an external one its own
// binary (its children), or from Ollama 0.30 on a llama.cpp `llama-server` (its
// children too), with --model once a model is loaded (a GPU-discovery runner has none).
func RunnerPIDs(modelsOnly bool) []int {
	self, _ := os.Executable()
	parent := 0
	if server != nil {
		self, parent = server.cmd.Path, server.PID()
	}
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
		runner := len(args) > 1 && args[0] == self && args[1] == "runner"
		if parent != 0 && !runner {
			runner = slices.ContainsFunc(args, func(a string) bool { return filepath.Base(a) == "llama-server" })
		}
		if runner && (!modelsOnly || strings.Contains(string(b), "--model")) &&
			(parent == 0 || parentPID(pid) == parent) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillRunners SIGKILLs the model runners of the shared runtime, as a crash would.
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

// ParentPID is the id of pid's parent process, 0 when it cannot be read: a test that
// starts hearth as a process tells that process's runners from the ones of the shared
// runtime in the test binary, which run the same executable.
func ParentPID(pid int) int { return parentPID(pid) }
