//go:build !race

package localworld

// raceEnabled: see race_on_test.go.
const raceEnabled = false
