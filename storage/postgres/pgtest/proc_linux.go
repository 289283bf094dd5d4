package pgtest

import (
	"os"
	"os/exec"
	"syscall"
)

// nobody is the unprivileged user a cluster runs as when the tests run as root, which
// initdb and postgres refuse.
const nobody = 65534

// ownForServer gives the cluster's directory to the user the server will run as.
func ownForServer(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return os.Chown(dir, nobody, nobody)
}

// runAsServer makes cmd run as that user, and die with the test process (a test binary
// killed by a timeout must not leave a server running).
func runAsServer(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
}

// signalStop asks the postmaster for a fast shutdown.
func signalStop(cmd *exec.Cmd) { cmd.Process.Signal(syscall.SIGINT) }
