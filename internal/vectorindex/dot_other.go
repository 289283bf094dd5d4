//go:build !amd64 || purego

package vectorindex

// dotInt8 is the dot product of two int8 vectors of the same length, in int32.
func dotInt8(a, b []int8) int32 { return dotInt8Go(a, b) }
