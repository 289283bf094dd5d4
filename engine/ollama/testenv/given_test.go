package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// givenBinary takes an executable file, relative or not, and refuses anything else
// with the variable's name in the error.
func TestGivenBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "ollama")
	plain := filepath.Join(dir, "notes")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if got, err := givenBinary("ollama"); err != nil || got != exe {
		t.Errorf("givenBinary(ollama) = %q, %v; want %q", got, err, exe)
	}
	for _, bad := range []string{plain, dir, filepath.Join(dir, "missing")} {
		if _, err := givenBinary(bad); err == nil || !strings.Contains(err.Error(), OllamaBinEnv) {
			t.Errorf("givenBinary(%s): %v; want an error naming %s", bad, err, OllamaBinEnv)
		}
	}
}
