package main

import "testing"

// TestBinaryBytes: device memory reads as GPU tools (and ollama) show it.
func TestBinaryBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 19: "1.5 MiB",
		8_589_934_592: "8.0 GiB", 25_769_803_776 - 1<<20: "24.0 GiB",
	} {
		if got := binaryBytes(n); got != want {
			t.Errorf("binaryBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
