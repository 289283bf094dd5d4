//go:build !amd64

package cpubuild

// hostFeatures is empty off x86-64: the variants are x86-64 builds, and off x86-64 the
// runtime runs the kernels built into the binary.
func hostFeatures() Features { return Features{} }
