package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
)

// TestRequestBodiesBudgetE2E: the bodies all requests hold together are bounded. While
// one request's body of 900 KB is arriving, another of 200 KB does not fit a 1 MiB
// budget: 429 with Retry-After. Once the first request ends, its bytes are free.
func TestRequestBodiesBudgetE2E(t *testing.T) {
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), RequestBytesTotal: 1 << 20}))
	t.Cleanup(srv.Close)

	pr, pw := io.Pipe()
	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", pr)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	pad := `{"model":"m","input":"` + strings.Repeat("x", 900<<10)
	if _, err := pw.Write([]byte(pad)); err != nil {
		t.Fatal(err)
	}
	small := `{"model":"m","input":"` + strings.Repeat("y", 200<<10) + `"}`
	// The first body is held as the server reads it (socket buffers may still hold
	// part of it): wait until the server says it holds all that was sent.
	deadline := time.Now().Add(30 * time.Second)
	for heldBodyBytes(t, srv.URL) < float64(len(pad)) {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %v bytes of the first body, want %d", heldBodyBytes(t, srv.URL), len(pad))
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, h, b := send(t, "POST", srv.URL+"/v1/responses", small, map[string]string{"Content-Type": "application/json"})
	if code, _ := envelope(t, "second body", h, b); st != http.StatusTooManyRequests || code != "too_many_requests" || h.Get("Retry-After") == "" {
		t.Fatalf("second body while the first is held: %d %s (Retry-After %q), want 429 too_many_requests", st, b, h.Get("Retry-After"))
	}
	pw.Write([]byte(`"}`))
	pw.Close()
	if s := <-first; s != http.StatusNotFound {
		t.Fatalf("first request: %d, want 404 (no model m)", s)
	}
	st, _, b = send(t, "POST", srv.URL+"/v1/responses", small, map[string]string{"Content-Type": "application/json"})
	if st != http.StatusNotFound {
		t.Fatalf("second body after the first ended: %d %.300s, want 404 (its bytes fit again)", st, b)
	}
}

// heldBodyBytes reads hearth_request_body_held_bytes from /metrics.
func heldBodyBytes(t *testing.T, base string) float64 {
	t.Helper()
	_, _, b := send(t, "GET", base+"/metrics", "", nil)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "hearth_request_body_held_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no hearth_request_body_held_bytes in /metrics")
	return 0
}
