package ollama

import (
	"context"
	"errors"
	"net"
	"sync"
)

// privateListener is the embedded runtime's listener: it has no address anywhere. Each
// connection is made by hearth itself (Dial, from the runtime client's transport) as a
// connected pair of sockets, one end handed to the runtime's server through Accept. No
// other process, user or web page can reach the runtime: there is no port to connect
// to, and no socket file.
//
// The runtime's server would otherwise listen on a loopback port, where any local
// process (of any user) could pull, push, delete and run models, bypassing hearth's keys
// and limits.
type privateListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPrivateListener() *privateListener {
	return &privateListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

var errRuntimeClosed = errors.New("embedded runtime: listener closed")

func (l *privateListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *privateListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *privateListener) Addr() net.Addr { return privateAddr{} }

// Dial makes a connection to the runtime's server; it has the signature of
// http.Transport's DialContext and ignores the address.
func (l *privateListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server, err := connPair()
	if err != nil {
		return nil, err
	}
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		err = errRuntimeClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, err
}

// privateAddr is the listener's address. The runtime checks the Host header of requests
// only when it listens on a loopback IP address; here it checks it always, and the
// Host hearth sends (see embeddedHost) passes.
type privateAddr struct{}

func (privateAddr) Network() string { return "hearth" }
func (privateAddr) String() string  { return "hearth-private" }
