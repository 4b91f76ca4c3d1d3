//go:build !unix

package bench

import "time"

// cpuTime is zero where getrusage is not available: the benchmarks then
// report no CPU time.
func cpuTime() time.Duration { return 0 }
