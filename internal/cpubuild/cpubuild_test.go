package cpubuild

import (
	"strings"
	"testing"
)

func TestMarchOf(t *testing.T) {
	for flags, want := range map[string]string{
		"":                                   "",
		"-O2 -g":                             "",
		"-O2 -g -march=x86-64-v3":            "x86-64-v3",
		"-march=x86-64-v2 -O3 -march=native": "native",
	} {
		if got := marchOf(flags); got != want {
			t.Errorf("marchOf(%q) = %q, want %q", flags, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	v3 := []string{"x86-64-v3", "x86-64-v2", "x86-64"}
	v2 := []string{"x86-64-v2", "x86-64"}
	for _, c := range []struct {
		level     string
		supported []string
		fails     bool
	}{
		{"", v2, false},
		{"x86-64", v2, false},
		{"x86-64-v3", v3, false},
		{"x86-64-v2", v3, false},
		{"native", v2, false}, // cannot be checked
		{"x86-64-v3", v2, true},
		{"x86-64-v4", v3, true},
		{"x86-64-v3", nil, true}, // an x86 binary's level on another architecture
	} {
		err := check(c.level, c.supported)
		if (err != nil) != c.fails {
			t.Errorf("check(%q, %v) = %v, want failure %v", c.level, c.supported, err, c.fails)
		}
		if err != nil && !strings.Contains(err.Error(), "CPU_LEVEL=x86-64") {
			t.Errorf("error does not say how to rebuild: %v", err)
		}
	}
}

func TestDescribeAdvisesRebuild(t *testing.T) {
	line, err := describe("", []string{"x86-64-v3", "x86-64-v2", "x86-64"})
	if err != nil || !strings.Contains(line, "rebuild with `make build` (CPU_LEVEL=x86-64-v3)") {
		t.Errorf("generic build on a v3 CPU: %q, %v", line, err)
	}
	line, err = describe("x86-64-v3", []string{"x86-64-v3", "x86-64-v2", "x86-64"})
	if err != nil || strings.Contains(line, "rebuild") || !strings.Contains(line, "built for x86-64-v3") {
		t.Errorf("v3 build on a v3 CPU: %q, %v", line, err)
	}
	if _, err := describe("x86-64-v3", []string{"x86-64"}); err == nil {
		t.Error("v3 build on an old CPU: no error")
	}
}
