package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeTracingSettings: the OTLP endpoint is a setting like the others of serve
// (flag, HEARTH_OTLP_ENDPOINT, the config file's otlp-endpoint), checked before
// anything starts: a value that is not an OTLP/HTTP URL, or a collector configured for
// gRPC, stops serve with the setting's name and what to give instead.
func TestServeTracingSettings(t *testing.T) {
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "HEARTH_OTLP_ENDPOINT"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	serve := func(args ...string) error {
		_, _, err := runCLI(t, append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, args...)...)
		return err
	}
	wantErr := func(what string, err error, words ...string) {
		t.Helper()
		for _, w := range words {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error saying %q", what, err, w)
			}
		}
	}
	wantErr("flag", serve("--otlp-endpoint", "127.0.0.1:4318"), "--otlp-endpoint", "not an OTLP/HTTP URL", "http://HOST:PORT")

	cfg := filepath.Join(t.TempDir(), "hearth.toml")
	os.WriteFile(cfg, []byte("otlp-endpoint = \"ftp://collector:4318\"\n"), 0o600)
	wantErr("config file", serve("--config", cfg), "--otlp-endpoint", "not an OTLP/HTTP URL")

	t.Setenv("HEARTH_OTLP_ENDPOINT", "collector")
	wantErr("environment", serve(), "HEARTH_OTLP_ENDPOINT", "not an OTLP/HTTP URL")
	os.Unsetenv("HEARTH_OTLP_ENDPOINT")

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	wantErr("gRPC", serve("--otlp-endpoint", "http://127.0.0.1:4317"), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "4318")
}
