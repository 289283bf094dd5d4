//go:build !unix

package ollama

// watchRunner: no runner stop lines where hearth cannot ask for a process by id.
func watchRunner(pid int, stopped func()) {}
