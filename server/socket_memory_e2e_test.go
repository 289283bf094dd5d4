package server_test

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hearth/cmd/hearth/wire"
	"hearth/server"
)

// TestWebSocketMemoryE2E measures what two WebSocket connections that each send 16
// response.create messages of 16 MiB (while the first waits for a slot) make hearth
// hold, with the default bounds; docs/security.md quotes it. It allocates hundreds of
// megabytes, so it runs only when asked:
//
//	HEARTH_TEST_WS_MEMORY=1 go test ./server -run TestWebSocketMemoryE2E -v
//
// The client runs in the same process: its own 16 MiB message and read buffers are in
// the numbers.
func TestWebSocketMemoryE2E(t *testing.T) {
	if os.Getenv("HEARTH_TEST_WS_MEMORY") == "" {
		t.Skip("set HEARTH_TEST_WS_MEMORY=1 to measure (allocates about 400 MB)")
	}
	srv, h, _ := lanHearth(t, wire.Config{})
	release := server.HoldSlot(h.Server, plain)
	defer release()
	const size, each = 16 << 20, 16
	head := wsCreate(plain, `"input":"hi","pad":"`)
	msg := []byte(head + strings.Repeat("x", size-len(head)-2) + `"}`)
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse) / (1 << 20)
	}
	t.Logf("before: heap %.0f MiB, RSS %s", heap(), procStatus("VmRSS"))

	var refused sync.WaitGroup
	counts := make([]int, 2)
	var conns []*wsConn
	for i := range counts {
		ws := dialWS(t, srv, nil)
		conns = append(conns, ws)
		refused.Add(1)
		go func() {
			defer refused.Done()
			for counts[i] < each-4 {
				_, data, err := ws.conn.Read(context.Background())
				if err != nil {
					return
				}
				if strings.Contains(string(data), server.CodeWebSocketQueueFull) {
					counts[i]++
				}
			}
		}()
		for range each {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := ws.conn.Write(ctx, websocket.MessageText, msg); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
	}
	refused.Wait()
	held := metric(t, srv, "", "hearth_websocket_held_bytes")
	t.Logf("sent %d messages of %d MiB on each of 2 connections: %v refused, %.0f MiB held, heap %.0f MiB, RSS %s (peak %s)",
		each, size>>20, counts, held/(1<<20), heap(), procStatus("VmRSS"), procStatus("VmHWM"))
	// 64 MiB per connection: the one running and three waiting.
	if want := float64(2 * 4 * len(msg)); held != want {
		t.Errorf("held %v bytes, want %v", held, want)
	}
	for _, c := range conns {
		c.conn.CloseNow()
	}
	waitFor(t, "the closed connections' bytes let go", func() bool { return metric(t, srv, "", "hearth_websocket_held_bytes") == 0 })
	debug.FreeOSMemory()
	after := heap()
	t.Logf("closed: heap %.0f MiB, RSS %s", after, procStatus("VmRSS"))
	if after > 64 {
		t.Errorf("heap %.0f MiB after the connections closed", after)
	}
}

// procStatus is a field of /proc/self/status (VmRSS, VmHWM), "" where there is none.
func procStatus(key string) string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
