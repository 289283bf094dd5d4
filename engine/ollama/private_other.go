//go:build !unix

package ollama

import "net"

// connPair returns an in-memory connection where the platform has no socket pairs.
func connPair() (net.Conn, net.Conn, error) {
	c, s := net.Pipe()
	return c, s, nil
}
