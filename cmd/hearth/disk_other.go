//go:build !unix

package main

import "errors"

// freeDisk is not measured on this platform; doctor says so.
func freeDisk(string) (uint64, error) { return 0, errors.New("not measured on this platform") }
