//go:build !unix

package toolgrammar

import "time"

func processCPU() time.Duration { return 0 }
