package engine

import "testing"

// TestLayersString: how hearth models and the log say where a model's layers run.
func TestLayersString(t *testing.T) {
	for _, tc := range []struct {
		l    Layers
		want string
	}{
		{Layers{Total: 29, CPU: 29}, "0/29 (CPU)"},
		{Layers{Total: 29, Devices: []DeviceLayers{{"Vulkan0", 29}}}, "29/29 Vulkan0"},
		{Layers{Total: 29, CPU: 9, Devices: []DeviceLayers{{"Vulkan0", 20}}}, "20/29 Vulkan0, 9/29 CPU"},
		{Layers{Total: 49, Devices: []DeviceLayers{{"CUDA0", 25}, {"CUDA1", 24}}}, "25/49 CUDA0, 24/49 CUDA1"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}
