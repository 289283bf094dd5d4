//go:build unix

package main

import "golang.org/x/sys/unix"

// freeDisk is the space an unprivileged user may still write on the disk holding path.
func freeDisk(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
