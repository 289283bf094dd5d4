//go:build unix

package toolgrammar

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process used (all threads, so garbage
// collection counts). Benchmarks report throughput per CPU second too,
// because on a shared machine wall time mostly measures the neighbours.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
