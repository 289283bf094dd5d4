package ollama

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// streamingLikeRuntime serves /stream the way the runtime's /api/generate streams: a
// producer goroutine holds the model's one slot while it generates, sends each chunk on
// an unbuffered channel with a bare send (checking for cancellation only between
// chunks), and gin's Context.Stream drains the channel until the client is gone.
func streamingLikeRuntime(slot chan struct{}) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/stream", func(c *gin.Context) {
		ch := make(chan any)
		go func() {
			defer close(ch)
			slot <- struct{}{} // the model's slot, as Completion's semaphore
			err := func() error {
				defer func() { <-slot }()
				for i := 0; ; i++ {
					if err := c.Request.Context().Err(); err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // a decode step
					ch <- i
				}
			}()
			ch <- err.Error() // after the slot is free, as the runtime does
		}()
		c.Stream(func(w io.Writer) bool {
			v, ok := <-ch
			if !ok {
				return false
			}
			fmt.Fprintf(w, "%v\n", v)
			return true
		})
	})
	return r
}

// leaveStreams opens a stream, reads a few chunks and leaves, rounds times; it fails
// the test when a round cannot start because an earlier one never gave the slot back.
// client reaches ln; nil means over TCP at ln's address.
func leaveStreams(t *testing.T, ln net.Listener, client *http.Client, rounds int) {
	slot := make(chan struct{}, 1)
	srv := &http.Server{Handler: streamingLikeRuntime(slot)}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/stream"
	if client == nil {
		client = http.DefaultClient
	} else {
		url = "http://" + embeddedHost + "/stream"
	}
	for i := range rounds {
		// A wedged slot stays taken: the next round's producer would wait for ever.
		select {
		case slot <- struct{}{}:
			<-slot
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the slot was never given back after a client left a stream", i)
		}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for range 1 + i%5 {
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		cancel() // leave mid-stream, as hearth does at a decision point
		resp.Body.Close()
	}
}

// TestDisconnectSafeListener: clients that leave streams mid-chunk never wedge the
// slot of a runtime-like streaming handler behind disconnectSafeListener. Served from a
// plain listener, the same handler wedges within a few hundred rounds (ollama/ollama#17131).
func TestDisconnectSafeListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaveStreams(t, disconnectSafeListener{ln}, nil, 300)
}

// TestDisconnectSafePrivateListener: the same over the embedded runtime's private
// listener, whose socket pairs must end streams the way TCP connections do.
func TestDisconnectSafePrivateListener(t *testing.T) {
	ln := newPrivateListener()
	client := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
	leaveStreams(t, disconnectSafeListener{ln}, client, 300)
}

// TestPrivateListenerClosed: once the runtime's server has closed its listener, hearth's
// dials fail at once instead of waiting for an Accept that never comes.
func TestPrivateListenerClosed(t *testing.T) {
	ln := newPrivateListener()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ln.Dial(ctx, "tcp", embeddedHost+":80"); err != errRuntimeClosed {
		t.Errorf("dial after close: %v, want %v", err, errRuntimeClosed)
	}
	if _, err := ln.Accept(); err != net.ErrClosed {
		t.Errorf("accept after close: %v, want net.ErrClosed", err)
	}
}
