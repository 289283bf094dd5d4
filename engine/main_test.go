package engine_test

import (
	"testing"

	"hearth/engine/ollama/testenv"
)

// TestMain lets the embedded runtime re-execute this test binary as a model
// runner (see testenv.Main).
func TestMain(m *testing.M) { testenv.Main(m) }
