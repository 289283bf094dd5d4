//go:build !linux

package ollama

// raiseRunnerStack: elsewhere the runner keeps the platform's thread stacks.
func raiseRunnerStack() bool { return false }

func restartSelf() error { return nil }
