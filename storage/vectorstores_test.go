package storage

import (
	"errors"
	"slices"
	"testing"
)

func TestVectorEncoding(t *testing.T) {
	v := []float32{0, -0, 1, -1.5, 3.4e38, 1e-45}
	got, err := DecodeVector(EncodeVector(v))
	if err != nil || !slices.Equal(got, v) {
		t.Errorf("round trip: %v %v", got, err)
	}
	if _, err := DecodeVector([]byte{1, 2, 3}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("3 bytes: %v", err)
	}
}
