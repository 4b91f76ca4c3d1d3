// Package clock is a helper package of the module that reads the clock.
package clock

import "time"

// Stamp formats the machine's time.
func Stamp() string { return time.Now().Format(time.RFC3339) }
