package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama"
)

// heartbeatOnly answers Ollama's heartbeat on addr until stopped.
func heartbeatOnly(t *testing.T, addr string) (stop func()) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 100 { // the port may linger briefly after the previous close
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("Ollama is running"))
	})}
	go srv.Serve(ln)
	return func() { srv.Close() }
}

// TestRuntimeSupervision: an external runtime that goes away shows in /healthz and
// /metrics, and hearth notices when it is back, with no restart of its own.
func TestRuntimeSupervision(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	stop := heartbeatOnly(t, addr)
	rt, err := ollama.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	h := wire.New(wire.Config{Runtime: rt})
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Health.Supervise(ctx, 20*time.Millisecond)

	health := func() (int, map[string]any) {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if st, _ := health(); st != 200 {
		t.Fatalf("healthz with the runtime up: %d", st)
	}
	// A heartbeat that times out on a loaded machine is a real (short) outage, so
	// the count is compared with the one before the runtime is stopped.
	before := metric(t, srv, "", "hearth_runtime_restarts_total")
	stop()
	waitFor(t, "the runtime to be seen down", func() bool { return metric(t, srv, "", "hearth_runtime_up") == 0 })
	st, body := health()
	if rtInfo, _ := body["runtime"].(map[string]any); st != 503 || rtInfo["ok"] != false || rtInfo["since"] == nil {
		t.Errorf("healthz with the runtime down: %d %v", st, body)
	}
	stop = heartbeatOnly(t, addr)
	defer stop()
	waitFor(t, "the runtime to be seen back", func() bool { return metric(t, srv, "", "hearth_runtime_up") == 1 })
	after := metric(t, srv, "", "hearth_runtime_restarts_total")
	if after < before+1 {
		t.Errorf("hearth_runtime_restarts_total went from %v to %v across an outage", before, after)
	}
	if st, body := health(); st != 200 || body["runtime"].(map[string]any)["restarts"].(float64) < after {
		t.Errorf("healthz after the runtime came back: %d %v (metric says %v restarts)", st, body, after)
	}
}
