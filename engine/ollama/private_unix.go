//go:build unix

package ollama

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// connPair returns the two ends of a connected unix socket pair: kernel-buffered like
// the TCP connections the runtime's server was written for (a response it writes does
// not wait for hearth to read it), and reported closed to one end when the other
// closes, which the disconnect guard relies on.
func connPair() (net.Conn, net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded runtime connection: %w", err)
	}
	files := [2]*os.File{os.NewFile(uintptr(fds[0]), "hearth-runtime"), os.NewFile(uintptr(fds[1]), "hearth-runtime")}
	defer files[0].Close() // FileConn holds its own duplicate of each descriptor
	defer files[1].Close()
	var conns [2]net.Conn
	for i, f := range files {
		if conns[i], err = net.FileConn(f); err != nil {
			if i == 1 {
				conns[0].Close()
			}
			return nil, nil, fmt.Errorf("embedded runtime connection: %w", err)
		}
	}
	return conns[0], conns[1], nil
}
