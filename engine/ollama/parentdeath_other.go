//go:build !linux

package ollama

// parentDeathSignalArmed: no parent-death signal outside Linux; dieWithParent polls.
const parentDeathSignalArmed = false

func armParentDeathSignal() {}
