package gomodule

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRoot: from a package's directory, Root finds the module's go.mod two levels up;
// GoTool names a go command that exists.
func TestRoot(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Errorf("Root() = %s, want %s", root, want)
	}
	if _, err := os.Stat(GoTool()); err != nil {
		t.Errorf("GoTool() = %s: %v", GoTool(), err)
	}
}
