// Package pricing is another package of the workflows' module: workflow
// code calling its exported functions is checked through them.
package pricing

import (
	"os"
	"time"
)

// Deadline reads the clock.
func Deadline(d time.Duration) time.Time { return time.Now().Add(d) }

// Region reads the environment, through an unexported helper.
func Region() string { return region() }

func region() string { return os.Getenv("REGION") }

// Total is deterministic.
func Total(cents []int) int {
	sum := 0
	for _, c := range cents {
		sum += c
	}
	return sum
}

// Quote is a price quote.
type Quote struct{ Cents int }

// Stamped reads the clock, in a method.
func (q Quote) Stamped() string { return time.Now().String() }

// Flagged reads the environment, and says why that is fine.
func Flagged() bool {
	//skein:nondeterministic-ok set at deploy time, the same for every replay
	return os.Getenv("FLAG") != ""
}
